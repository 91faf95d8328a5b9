#!/usr/bin/env bash
# scripts/quickstart.sh - README command 1: install what is missing, build, and run apps/lra_benchmark on its
# embedded default (the `tiny` preset: every task on generated or packaged data, scratch vs. self-pretrained).
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
export OMP_WAIT_POLICY=PASSIVE
bash scripts/setup.sh
bash scripts/build.sh
./build/lra_benchmark run --preset tiny --out runs/quickstart "$@"
