#!/usr/bin/env bash
# scripts/gpu_bundle.sh - pack, from a build folder of this machine, everything the GPU machine needs to run the CUDA
# checks with nothing installed there: one git-ignored archive that the device tool's `carry` takes
# (docs/cuda.md, "When a device is lent").
#
#   scripts/gpu_bundle.sh [--portable | --build DIR] [--out DIR] [--make] [--no-xz] [--no-reference] [--strip] [--keep-stage]
#
#   --portable       what to pack for a lease: configure (once) and build build-portable/, whose C++ is compiled for any
#                    x86-64 (DL_NATIVE=OFF: no -march=native, so no instruction this machine has and the GPU machine's
#                    CPU may lack - a SIGILL there would spend the lease) and whose CUDA code for sm_90 alone (the H200);
#                    implies --make. The first configure + build + pack took 549 s here (2026-12-04); OpenBLAS picks its
#                    kernels at run time either way
#   --build DIR      the build folder (default build/, as scripts/build.sh makes it; CUDA archs must include 90)
#   --out DIR        where the archive goes (default gpu_bundle/, ignored by git): DIR/dl_gpu_bundle.tar.xz
#   --make           build the bundled targets first (else a stale or missing one is an error naming it)
#   --no-xz          stage only (DIR/stage/dl_gpu_bundle/): what tests/ uses to check the bundle cheaply
#   --no-reference   skip the CPU reference cells (the check then reports its device curves without a comparison)
#   --strip          strip the binaries: 0.8 MiB less packed (18.6 instead of 19.4), but a crash's or compute-sanitizer's
#                    host backtrace then has no function names; the first GPU runs want them, so they are kept
#   --keep-stage     keep DIR/stage/ after packing (scripts/check_bundle.sh can check either)
#
# The archive holds one folder, dl_gpu_bundle/:
#   bin/        gpu_smoke, the CUDA tests (test_cuda, test_nccl), test_autograd (every OpCase's AgreesOnDevice),
#               test_onnx (an export from a model on the GPU writes the CPU's bytes),
#               bench_cuda, bench_workloads, and every app that takes --device cuda; RUNPATH $ORIGIN/../lib
#   lib/        every shared library those binaries resolve (ldd) except the allow-list of scripts/gpu_env.sh (glibc,
#               libstdc++/libgcc_s, the CUDA driver, cuBLAS/cuBLASLt/cuFFT/NCCL), each with RUNPATH $ORIGIN, so a
#               library's own dependencies are found beside it too
#   lib/openmpi/, share/openmpi/   OpenMPI's components and help files for a one-rank MPI job without mpirun (test_nccl
#               bootstraps NCCL over MPI even with one rank): the components whose libraries are all in the bundle
#   scripts/, bench/   gpu_check.sh and what it sources or runs; torch_workloads.py and its import
#   reference/  the CPU curves of the cells gpu_check.sh runs on the device (scripts/gpu_cells.sh), run here
#   MANIFEST.txt  commit, date, build type, compiler, CUDA archs, this CPU (a -march=native build needs its
#               instruction set), the sonames the machine must provide, and every file's size and sha256
# The CUDA runtime is linked statically (CMakeLists.txt), so the binaries need only the driver, cuBLAS, cuFFT and NCCL
# from the GPU machine; gpu_check.sh finds them there and says where.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_env.sh
source scripts/gpu_cells.sh

BUILD=build OUTDIR=gpu_bundle MAKE=0 XZ=1 REF=1 STRIP=0 KEEP=0 PORTABLE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --portable) PORTABLE=1 MAKE=1 BUILD=build-portable; shift ;;
    --build) BUILD=${2:?--build needs a folder}; shift 2 ;;
    --out) OUTDIR=${2:?--out needs a folder}; shift 2 ;;
    --make) MAKE=1; shift ;;
    --no-xz) XZ=0; shift ;;
    --no-reference) REF=0; shift ;;
    --strip) STRIP=1; shift ;;
    --keep-stage) KEEP=1; shift ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu_bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
NAME=dl_gpu_bundle
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BINS=(gpu_smoke test_cuda test_nccl test_autograd test_onnx bench_cuda bench_workloads lra_benchmark fpt pretrained_convs classify)
T0=$(date +%s)
say() { echo "gpu_bundle: $*"; }
die() { echo "gpu_bundle: $*" >&2; exit 1; }
secs() { echo $(($(date +%s) - $1)); }

# ---- 1. the build folder: configured with the CUDA backend, every target built and up to date, sm_90 inside -------
if [ "$PORTABLE" = 1 ] && [ ! -f "$BUILD/CMakeCache.txt" ]; then
  [ -n "${CXX:-}" ] || ! command -v clang++ >/dev/null || export CXX=clang++  # as scripts/build.sh chooses
  say "configuring $BUILD: any x86-64 (DL_NATIVE=OFF), CUDA for sm_90"
  cmake -S . -B "$BUILD" -G Ninja -DDL_NATIVE=OFF -DDL_CUDA_ARCHS=90 >/dev/null
fi
[ -f "$BUILD/CMakeCache.txt" ] || die "$BUILD/CMakeCache.txt not found: configure and build first (scripts/build.sh), or --build DIR"
BUILD=$(cd "$BUILD" && pwd)
cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt" | head -1; }
ARCHS=$(cache DL_CUDA_ARCHS)
[ -n "$ARCHS" ] || die "$BUILD was configured without the CUDA backend (no DL_CUDA_ARCHS in CMakeCache.txt: nvcc not found or -DDL_CUDA=OFF)"
command -v patchelf >/dev/null || die "patchelf not found: apt-get install patchelf (scripts/setup.sh installs it)"
if [ "$MAKE" = 1 ]; then
  say "building ${BINS[*]} in $BUILD"
  cmake --build "$BUILD" -j"$(nproc)" --target "${BINS[@]}"
else
  stale=$(cmake --build "$BUILD" --target "${BINS[@]}" -- -n 2>&1 | grep -E '(Building|Linking|Generating)' | sed 's/^\[[0-9/]*\] //' | head -5 || true)
  [ -z "$stale" ] || die "$BUILD is out of date for the bundled targets; run with --make, or cmake --build $BUILD --target ${BINS[*]}. First steps it would take:
$stale"
fi
for b in "${BINS[@]}"; do [ -x "$BUILD/$b" ] || die "$BUILD/$b is missing (is it a target of this build? the CUDA backend and NCCL must be ON)"; done
python3 scripts/fatbin_archs.py --require 90 "${BINS[@]/#/$BUILD/}" >/tmp/gpu_bundle_archs.$$ || {
  cat /tmp/gpu_bundle_archs.$$; rm -f /tmp/gpu_bundle_archs.$$; die "a binary lacks sm_90 (the H200's) machine code or PTX"; }
FATBIN=$(awk '{print $3, $5}' /tmp/gpu_bundle_archs.$$ | sort -u | tr '\n' ' ')
rm -f /tmp/gpu_bundle_archs.$$
say "CUDA archs $ARCHS; fat binaries hold $FATBIN"
if [ "$(cache DL_NATIVE)" != OFF ]; then
  say "note: $BUILD is built with -march=native (DL_NATIVE) on '$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')';" \
      "the manifest records this CPU's flags and gpu_check.sh names any the GPU machine's CPU lacks"
fi

# ---- 2. stage: the binaries, their libraries, OpenMPI's one-rank runtime ------------------------------------------
STAGE=$OUTDIR/stage/$NAME
rm -rf "$OUTDIR/stage"
mkdir -p "$STAGE"/{bin,lib/openmpi,share/openmpi,scripts,bench,reference}
for b in "${BINS[@]}"; do cp "$BUILD/$b" "$STAGE/bin/$b"; done
[ "$STRIP" = 1 ] && strip --strip-all "$STAGE"/bin/*

declare -A BUNDLED=()  # soname -> the file it was copied from
# Copies every library FILE resolves (ldd: the whole closure) that is not allow-listed; a library it cannot resolve
# here is an error (it would be missing there too), unless allow-listed.
bundle_deps() {
  local file=$1 line so path
  while read -r line; do
    [[ $line == *"=>"* ]] || continue
    so=${line%% =>*}; so=${so//[[:space:]]/}
    path=${line#*=> }; path=${path%% (*}
    dl_allowed "$so" && continue
    [ "$path" = "not found" ] && die "$file needs $so, which is not found on this machine"
    [ -n "${BUNDLED[$so]:-}" ] && continue
    BUNDLED[$so]=$(readlink -f "$path")
    cp -L "$path" "$STAGE/lib/$so"
  done < <(ldd "$file")
}
for b in "${BINS[@]}"; do bundle_deps "$BUILD/$b"; done

# OpenMPI: the components (dlopen'ed by MPI_Init) whose libraries the bundle has, and the help files.
MPI_SKIPPED=""
if [ -n "${BUNDLED[libmpi.so.40]:-}" ]; then
  pkglib=$(ompi_info --parsable --path pkglibdir 2>/dev/null | cut -d: -f3- || true)
  [ -d "$pkglib" ] || pkglib=$(dirname "${BUNDLED[libmpi.so.40]}")/openmpi/lib/openmpi3
  pkgdata=$(ompi_info --parsable --path pkgdatadir 2>/dev/null | cut -d: -f3- || true)
  [ -d "$pkgdata" ] || pkgdata=/usr/share/openmpi
  [ -d "$pkglib" ] || die "libmpi.so.40 is bundled but OpenMPI's components are not found ($pkglib)"
  for c in "$pkglib"/mca_*.so; do
    ok=1
    while read -r so; do  # each library the component needs: allow-listed, bundled, or OpenMPI's own libmca_common_*
      dl_allowed "$so" || [ -n "${BUNDLED[$so]:-}" ] || [[ $so == libmca_common_* ]] || { ok=0; break; }
    done < <(ldd "$c" | awk '/=>/ {print $1}')
    if [ "$ok" = 1 ]; then cp "$c" "$STAGE/lib/openmpi/"; bundle_deps "$c"
    else MPI_SKIPPED="$MPI_SKIPPED $(basename "$c" .so)"; fi
  done
  cp "$pkgdata"/*.txt "$STAGE/share/openmpi/" 2>/dev/null || true
  say "OpenMPI: $(ls "$STAGE/lib/openmpi" | wc -l) components from $pkglib (skipped, needing libraries outside the bundle:$MPI_SKIPPED)"
fi
patchelf --set-rpath '$ORIGIN/../lib' "$STAGE"/bin/*
for f in "$STAGE"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
for f in "$STAGE"/lib/openmpi/*.so; do patchelf --set-rpath '$ORIGIN/..' "$f"; done

cp scripts/gpu_check.sh scripts/gpu_tests.py scripts/gpu_check_report.py scripts/gpu_env.sh scripts/gpu_cells.sh scripts/fatbin_archs.py \
  "$STAGE/scripts/"
cp bench/torch_workloads.py bench/torch_common.py "$STAGE/bench/"

# ---- 3. the CPU reference: the cells gpu_check.sh runs on the device, here on the CPU, with the staged binaries ------
if [ "$REF" = 1 ]; then
  ref_tmp=$(mktemp -d /tmp/gpu_bundle_ref.XXXXXX)
  for entry in "${DL_GPU_CELLS[@]}"; do
    IFS='|' read -r cell exe args <<<"$entry"
    t=$(date +%s)
    # shellcheck disable=SC2086  # ARGS is split on spaces by design (scripts/gpu_cells.sh)
    (dl_bundle_env "$STAGE"; DL_DATA_DIR="$ref_tmp/${cell}_data" "$STAGE/bin/$exe" "${DL_GPU_CELL_ARGS[@]}" $args \
      --device cpu --threads "$(nproc)" --out "$ref_tmp/$cell" >"$ref_tmp/$cell.log" 2>&1) ||
      { tail -5 "$ref_tmp/$cell.log" >&2; die "the CPU reference cell $cell failed (log: $ref_tmp/$cell.log)"; }
    f=$(find "$ref_tmp/$cell/cells" -name result.json | head -1)
    mkdir -p "$STAGE/reference/$cell"
    cp "$f" "$(dirname "$f")/metrics.csv" "$STAGE/reference/$cell/"
    say "reference $cell: $(secs "$t") s on the CPU"
  done
  rm -rf "$ref_tmp"
fi

# ---- 4. the manifest -----------------------------------------------------------------------------------------------
# what the binaries link (NEEDED), and what they open on first use (cuBLAS, cuFFT, NCCL: cuda/lazy_libs.h; the build
# lists them in lazy_libs.txt): gpu_check.sh looks for these on the GPU machine and puts their folders on LD_LIBRARY_PATH
needed=$( (for f in "$STAGE"/bin/* "$STAGE"/lib/*.so* "$STAGE"/lib/openmpi/*.so; do readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done
  cat "$BUILD/lazy_libs.txt" 2>/dev/null) | sort -u | while read -r so; do [ -e "$STAGE/lib/$so" ] || echo "$so"; done | tr '\n' ' ')
# the newest symbol versions any bundled file asks of glibc and libstdc++: the GPU machine's must be at least these
newest() { for f in "$STAGE"/bin/* "$STAGE"/lib/*.so* "$STAGE"/lib/openmpi/*.so; do objdump -T "$f" 2>/dev/null |
  grep -o "$1[0-9.]*" | sed "s|^|$(basename "$f") |"; done | sort -k2,2V | tail -1; }
read -r GLIBC_BY GLIBC_V <<<"$(newest 'GLIBC_2\.')"
read -r CXX_BY CXX_V <<<"$(newest 'GLIBCXX_3\.')"
{
  echo "bundle      $NAME"
  echo "commit      $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!gpu_bundle' 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "date        $(date -u +%FT%TZ)"
  echo "build       $BUILD, $(cache CMAKE_BUILD_TYPE), $(cache CMAKE_CXX_COMPILER) ($("$(cache CMAKE_CXX_COMPILER)" --version | head -1)), nvcc $(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")/\1/p' "$BUILD"/CMakeFiles/*/CMakeCUDACompiler.cmake 2>/dev/null | head -1)"
  echo "cuda_archs  $ARCHS (fat binaries: $FATBIN)"
  echo "native      $(cache DL_NATIVE)"
  echo "build_cpu   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "build_flags $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "glibc       $(getconf GNU_LIBC_VERSION)"
  echo "requires    ${GLIBC_V#GLIBC_} $GLIBC_BY ${CXX_V#GLIBCXX_} $CXX_BY"
  echo "needs       $needed"
  echo "openmpi_skipped$MPI_SKIPPED"
  echo "files       size sha256 path"
  (cd "$STAGE" && find . -type f ! -name MANIFEST.txt | sort | while read -r f; do
    printf '%12d %s %s\n' "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-64)" "${f#./}"; done)
} >"$STAGE/MANIFEST.txt"

# ---- 5. pack and measure -------------------------------------------------------------------------------------------
UNPACKED=$(du -sb "$STAGE" | cut -f1)
mb() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
say "staged $STAGE: $(mb "$UNPACKED") in $(find "$STAGE" -type f | wc -l) files; binaries:"
for b in "${BINS[@]}"; do printf '  %-18s %s\n' "$b" "$(mb "$(stat -c %s "$STAGE/bin/$b")")"; done
say "libraries: ${#BUNDLED[@]} ($(mb "$(du -sb "$STAGE/lib" | cut -f1)") with OpenMPI's components)"
if [ "$XZ" = 1 ]; then
  t=$(date +%s)
  ARCHIVE=$OUTDIR/$NAME.tar.xz
  # binaries side by side in one xz stream: their identical fat binaries and framework code fall in one 64 MiB window
  (cd "$OUTDIR/stage" && find "$NAME" -type f | sort | tar --owner=0 --group=0 -cf - -T -) | xz -9 -T1 >"$ARCHIVE.tmp"
  mv "$ARCHIVE.tmp" "$ARCHIVE"
  [ "$KEEP" = 1 ] || rm -rf "$OUTDIR/stage"
  SIZE=$(stat -c %s "$ARCHIVE")
  TREE=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s}')
  say "$ARCHIVE: $(mb "$SIZE") ($(mb "$UNPACKED") unpacked), packed in $(secs "$t") s; with the tracked tree ($(mb "$TREE"))" \
      "$(mb $((SIZE + TREE))) of the 64 MiB a call carries"
  [ "$SIZE" -le $((40 * 1048576)) ] || say "WARNING: the archive is above the 40 MiB aimed at"
  [ $((SIZE + TREE)) -le $((64 * 1048576)) ] || die "archive + tree exceed the 64 MiB that travels"
fi
say "done in $(secs "$T0") s"
