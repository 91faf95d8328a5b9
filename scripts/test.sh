#!/usr/bin/env bash
# scripts/test.sh - README command 2: install what is missing, build, run the whole test suite (ctest), then every
# fuzz target for a bounded number of runs and four test binaries built on the same ASan + UBSan libraries
# (scripts/fuzz.sh --ci --tests: its own clang build in build-fuzz/; DL_NO_FUZZ=1 skips both).
set -euo pipefail
cd "$(dirname "$0")/.."
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"   # older OpenBLAS kernels misbehave on newer CPUs
export OMP_WAIT_POLICY=PASSIVE                              # OpenMP and OpenBLAS share 2 cores: sleep, don't spin
bash scripts/setup.sh
bash scripts/build.sh "$@"
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900)
if [ "${DL_NO_FUZZ:-0}" != 1 ]; then
  bash scripts/fuzz.sh --ci --tests
fi
