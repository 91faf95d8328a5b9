#!/usr/bin/env bash
# scripts/quickstart.sh - README command 1: install what is missing, build the app (only lra_benchmark and what it
# links; the tests are the second command), and run it on its embedded default, the `tiny` preset.
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
export OMP_WAIT_POLICY=PASSIVE
bash scripts/setup.sh
bash scripts/build.sh --target lra_benchmark
# --jobs: the 12 cells run side by side, one per core and one thread each (same results as one after another at
# --threads 1; docs/harness.md), which the small models use better than two threads in one cell.
./build/lra_benchmark run --preset tiny --jobs "$(nproc)" --out runs/quickstart "$@"
