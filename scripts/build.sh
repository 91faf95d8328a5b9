#!/usr/bin/env bash
# scripts/build.sh - configure and build (Release) into build/ with Ninja: everything, or only the targets named.
# CUDA is built when nvcc is found (tests skip without a GPU; nvcc uses its own host compiler, g++).
#   bash scripts/build.sh                          everything (apps, tests, benchmarks)
#   bash scripts/build.sh --target lra_benchmark   one target and what it needs (scripts/quickstart.sh: the first run
#                                                  then waits for the app, not for ~800 tests); repeatable
# Other args go to cmake, e.g. -DDL_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
# The compiler: clang++ when installed (scripts/setup.sh installs it), unless CXX names another. Debian 12's GCC 12
# miscompiles vector constants when it generates AVX-512 code, so a GCC build turns AVX-512 off (CMakeLists.txt) and
# its training steps are 1.3-1.5x slower; clang 14 builds the same code correctly with AVX-512 on
# (scripts/compiler_probe.py, tests/tensor/test_compiler.cpp). An existing build/ keeps the compiler it was
# configured with; `CXX=g++ bash scripts/build.sh` in a fresh build/ chooses GCC.
if [ -z "${CXX:-}" ] && command -v clang++ >/dev/null 2>&1; then export CXX=clang++; fi
targets=()
cmake_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) [ $# -ge 2 ] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
cmake -S . -B build -G Ninja "${cmake_args[@]}" >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
