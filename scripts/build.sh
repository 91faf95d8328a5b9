#!/usr/bin/env bash
# scripts/build.sh - configure and build everything (Release) into build/ with Ninja.
# CUDA is built when nvcc is found (tests skip without a GPU). Extra args go to cmake, e.g. -DDL_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja "$@" >/dev/null
cmake --build build -j"$(nproc)"
