#!/usr/bin/env bash
# scripts/build.sh - configure and build everything (Release) into build/ with Ninja.
# CUDA is built when nvcc is found (tests skip without a GPU; nvcc uses its own host compiler, g++). Extra args go to
# cmake, e.g. -DDL_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
# The compiler: clang++ when installed (scripts/setup.sh installs it), unless CXX names another. Debian 12's GCC 12
# miscompiles vector constants when it generates AVX-512 code, so a GCC build turns AVX-512 off (CMakeLists.txt) and
# its training steps are 1.3-1.5x slower; clang 14 builds the same code correctly with AVX-512 on
# (scripts/compiler_probe.py, tests/tensor/test_compiler.cpp). An existing build/ keeps the compiler it was
# configured with; `CXX=g++ bash scripts/build.sh` in a fresh build/ chooses GCC.
if [ -z "${CXX:-}" ] && command -v clang++ >/dev/null 2>&1; then export CXX=clang++; fi
cmake -S . -B build -G Ninja "$@" >/dev/null
cmake --build build -j"$(nproc)"
