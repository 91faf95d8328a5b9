#!/usr/bin/env bash
# scripts/check_bundle.sh - prove a GPU bundle (scripts/gpu_bundle.sh) self-contained on this machine: what it runs
# with on the GPU machine is itself plus the allow-list of scripts/gpu_env.sh (glibc, libstdc++/libgcc_s, the CUDA
# driver, cuBLAS/cuBLASLt/cuFFT/NCCL), nothing else of Debian's.
#
#   scripts/check_bundle.sh BUNDLE      BUNDLE: the archive (.tar.xz / .tar) or an unpacked dl_gpu_bundle/ folder
#
# 1. resolution: for every bundled binary, library and OpenMPI component, each library ldd resolves (with
#    LD_LIBRARY_PATH cleared) lies in the bundle, or is allow-listed. A library found elsewhere is a leak, named.
# 2. start: in a private mount namespace (unshare -m, root) every Debian file that a bundled library was copied from
#    (and any leaked one) is made unreachable by bind-mounting /dev/null over it, and OpenMPI's, PMIx's and hwloc's
#    plugin folders by an empty folder over them; then, with LD_LIBRARY_PATH cleared, every binary must start:
#    `--help` for apps and drivers, `--gtest_list_tests` for the GTest binaries, gpu_smoke in full (without a device
#    it reports every item skipped), and one 2-step classify cell with --comm mpi: a one-rank MPI job that loads
#    OpenMPI's components from the bundle (what test_nccl does on the GPU machine).
# Exit status 0: self-contained; 1: a leak or a binary that does not start (each named); 77: cannot check here (not
# root, or unshare -m refused), which ctest reports as skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/gpu_env.sh"
ARG=${1:?usage: check_bundle.sh BUNDLE (the .tar.xz or the unpacked dl_gpu_bundle folder)}
T0=$(date +%s)
TMP=$(mktemp -d /tmp/check_bundle.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "check_bundle: FAIL: $*"; fail=1; }

if [ -f "$ARG" ]; then  # unpack the way the GPU machine does when its tar lacks xz: Python's tarfile
  python3 -c "import sys, tarfile
t = tarfile.open(sys.argv[1])
t.extractall(sys.argv[2], **({'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}))" "$ARG" "$TMP/unpacked" ||
    { echo "check_bundle: cannot unpack $ARG"; exit 1; }
  B=$(echo "$TMP"/unpacked/*)
else
  B=$(cd "$ARG" && pwd)
fi
[ -d "$B/bin" ] && [ -d "$B/lib" ] || { echo "check_bundle: $B is not a bundle (no bin/ and lib/)"; exit 1; }
if ! unshare -m true 2>/dev/null; then
  echo "check_bundle: skipped: unshare -m is refused here ($(id -un)); the check needs a private mount namespace (root)"
  exit 77
fi

# ---- 1. every library each file resolves: in the bundle or allow-listed ---------------------------------------------
declare -A MASK=()  # files to make unreachable
files=("$B"/bin/* "$B"/lib/*.so* "$B"/lib/openmpi/*.so)
for f in "${files[@]}"; do
  while read -r so path; do
    if [ "$path" = "not found" ]; then
      dl_allowed "$so" || bad "${f#$B/} needs $so, which resolves nowhere"
    elif [[ $path != "$B"/* ]] && ! dl_allowed "$so"; then
      bad "${f#$B/} resolves $so outside the bundle: $path"
      MASK[$(readlink -f "$path")]=1
    fi
  done < <(env -u LD_LIBRARY_PATH ldd "$f" 2>/dev/null | awk '/=>/ {p = $3; if ($3 == "not") p = "not found"; print $1, p}')
done
echo "check_bundle: resolution: ${#files[@]} files checked ($(ls "$B"/bin | wc -l) binaries, $(ls "$B"/lib | grep -c '\.so') libraries, $(ls "$B"/lib/openmpi | wc -l) OpenMPI components)"

# Every Debian copy of a bundled library: the loader's cache and the folders Debian keeps libraries in.
for so in $(ls "$B"/lib | grep '\.so'); do
  while read -r f; do [ -e "$f" ] && MASK[$(readlink -f "$f")]=1; done < <(
    ldconfig -p | awk -v so="$so" '$1 == so {print $NF}'
    for pat in "/lib/x86_64-linux-gnu/$so" "/usr/lib/x86_64-linux-gnu/$so" "/usr/lib/x86_64-linux-gnu/*/$so" \
               "/usr/lib/x86_64-linux-gnu/*/lib/$so" "/usr/lib/llvm-*/lib/$so"; do compgen -G "$pat" || true; done)
done
DIRS=()
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/lib/x86_64-linux-gnu/hwloc /usr/share/openmpi \
         /etc/openmpi; do
  [ -d "$d" ] && DIRS+=("$d")
done

# ---- 2. every binary starts with those made unreachable ------------------------------------------------------------
mkdir -p "$TMP/empty" "$TMP/out"
printf '%s\n' "${!MASK[@]}" >"$TMP/mask.txt"
printf '%s\n' "${DIRS[@]}" >"$TMP/dirs.txt"
cat >"$TMP/inside.sh" <<'EOF'
# runs in the private mount namespace: mask, then start each binary with a clean environment
B=$1 TMP=$2
source "$B/scripts/gpu_env.sh"
while read -r f; do mount --bind /dev/null "$f" || { echo "MASKFAIL $f"; exit 3; }; done <"$TMP/mask.txt"
while read -r d; do mount --bind "$TMP/empty" "$d" || { echo "MASKFAIL $d"; exit 3; }; done <"$TMP/dirs.txt"
run() {  # run NAME CMD...: a clean environment (no LD_LIBRARY_PATH), the bundle's, 60 s; status and the output's start
  local name=$1; shift
  env -i PATH=/usr/bin:/bin HOME=$TMP LANG=C.UTF-8 DL_DATA_DIR=$TMP/data bash -c 'source "$0/scripts/gpu_env.sh"; dl_bundle_env "$0"; exec "$@"' "$B" \
    timeout 60 "$@" >"$TMP/out/$name.log" 2>&1
  echo "RC $? $name"
}
for f in "$B"/bin/*; do
  n=$(basename "$f")
  case $n in
    test_*) run "$n" "$f" --gtest_list_tests ;;
    *) run "$n" "$f" --help ;;
  esac
done
run gpu_smoke_run "$B/bin/gpu_smoke"
run mpi_one_rank "$B/bin/classify" cell --task listops --layer s4d --seed 0 --quiet --comm mpi --threads 1 --out "$TMP/mpi_cell" \
  --set steps=2 --set warmup=1 --set eval_every=2 --set train_size=64 --set val_size=16 --set test_size=16 --set seq_len=32
EOF
echo "check_bundle: start: ${#MASK[@]} Debian library files and ${#DIRS[@]} plugin folders made unreachable"
DL_DATA_DIR=$TMP/data unshare -m bash "$TMP/inside.sh" "$B" "$TMP" >"$TMP/inside.log" 2>&1
grep MASKFAIL "$TMP/inside.log" && bad "could not mask a file (see above)"
while read -r _ rc name; do
  log=$TMP/out/$name.log
  if [ "$rc" != 0 ]; then
    bad "$name exited $rc: $(grep -m2 -E 'error|rror while loading|cannot|not found' "$log" | tr '\n' ' ' | cut -c1-300)"
  elif [ "$name" = gpu_smoke_run ] && ! grep -q 'skipped: no device' "$log" && ! grep -q 'passed, 0 failed' "$log"; then
    bad "gpu_smoke ran but reported neither 'skipped: no device' nor a clean pass: $(tail -1 "$log")"
  elif [ ! -s "$log" ]; then
    bad "$name printed nothing"
  fi
done < <(grep '^RC ' "$TMP/inside.log")
[ "$(grep -c '^RC ' "$TMP/inside.log")" -ge "$(ls "$B"/bin | wc -l)" ] || bad "not every binary was run: $(tail -3 "$TMP/inside.log")"
started=$(grep -c '^RC 0 ' "$TMP/inside.log")
echo "check_bundle: $started of $(grep -c '^RC ' "$TMP/inside.log") runs started and exited 0 (every binary, gpu_smoke in full, a one-rank MPI cell)"
echo "check_bundle: $([ $fail = 0 ] && echo "self-contained" || echo "NOT self-contained") ($B, $(($(date +%s) - T0)) s)"
exit $fail
