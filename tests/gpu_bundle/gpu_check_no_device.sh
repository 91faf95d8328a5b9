#!/usr/bin/env bash
# tests/gpu_bundle/gpu_check_no_device.sh - scripts/gpu_check.sh, run from a staged bundle on a machine without a GPU,
# must not rot between leases (ctest gpu_check_no_device; the bundle is staged by ctest gpu_bundle_stage):
#   1. no device: exit 0; the summary is written and says "skipped: no device" for the tests and for the benchmarks and
#      cells, names the driver's reason, lists where each GPU library was found; gpu_smoke opened cuBLAS, cuFFT and NCCL
#      (its `libraries` item passed: the binaries open them on first use, cuda/lazy_libs.h) and skipped every other item;
#      the runner ran test_nccl's host tests into results.tsv; at most 8 files in OUTDIR (the device tool's limit)
#   2. a GPU machine without cuBLAS / cuFFT / NCCL (a stand-in nvidia-smi that lists an H200, and the toolkit's library
#      folder hidden in a private mount namespace): exit 2, the summary says STOPPED and names libcublas.so.13
#   BUNDLE is the staged dl_gpu_bundle folder. Exit 77 (skipped) on a machine with a GPU: there the real check runs.
set -uo pipefail
B=${1:?usage: gpu_check_no_device.sh BUNDLE}
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && { echo "a GPU is present: run the real check"; exit 77; }
TMP=$(mktemp -d /tmp/gpu_check_no_device.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail=0
expect() {  # expect FILE PATTERN WHAT
  grep -qE -- "$2" "$1" || { echo "FAIL: $3: no line matching '$2' in $(basename "$1")"; fail=1; }
}

# ---- 1. no device ----
t0=$(date +%s)
bash "$B/scripts/gpu_check.sh" "$TMP/out" >"$TMP/stdout.txt" 2>&1
rc=$?
S=$TMP/out/summary.txt
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc in the no-device mode (expected 0)"; fail=1; }
[ -s "$S" ] || { echo "FAIL: no summary.txt"; cat "$TMP/stdout.txt"; exit 1; }
expect "$S" '^3 tests: skipped: no device \(.+\)' "the tests step"
expect "$S" '^4 benchmarks and app cells: skipped: no device \(.+\)' "the benchmark step"
expect "$S" '^mode: no device' "the closing mode line"
expect "$S" 'libcublas\.so\.[0-9]+ +(/|NOT FOUND)' "where cuBLAS was found"
expect "$S" 'smoke: 1 pass, 0 fail, [0-9]+ skip' "the smoke counts"
expect "$S" 'test_nccl: [0-9]+ passed' "the runner check"
expect "$TMP/stdout.txt" '^total [0-9]+ s' "the summary printed last"
[ "$(tail -1 "$TMP/stdout.txt" | cut -c1-6)" = "total " ] || { echo "FAIL: the summary is not the last thing printed"; fail=1; }
skips=$(awk -F'\t' 'NR > 1 && $2 == "SKIP" && $6 ~ /^skipped: no device/' "$TMP/out/smoke.tsv" | wc -l)
rows=$(($(wc -l <"$TMP/out/smoke.tsv") - 1))
[ "$rows" -ge 20 ] && [ "$skips" -eq $((rows - 1)) ] || { echo "FAIL: smoke.tsv: $skips of $rows items skipped for no device (all but libraries)"; fail=1; }
awk -F'\t' '$1 == "libraries" && $2 == "PASS" && $6 ~ /cuBLAS [0-9]/ && $6 ~ /cuFFT [0-9]/' "$TMP/out/smoke.tsv" | grep -q . ||
  { echo "FAIL: smoke.tsv: the libraries item did not pass with cuBLAS's and cuFFT's versions"; fail=1; }
n=$(ls "$TMP/out" | wc -l)
[ "$n" -le 8 ] || { echo "FAIL: $n files in OUTDIR (the device tool returns 8)"; fail=1; }
# the listing first: `tar | grep -q` under pipefail fails when grep stops reading before tar has written everything
tar -tzf "$TMP/out/logs.tar.gz" >"$TMP/logs_list.txt" 2>&1
grep -q 'logs/smoke.log' "$TMP/logs_list.txt" || { echo "FAIL: logs.tar.gz lacks logs/smoke.log"; fail=1; }
echo "no-device mode: exit $rc, $(($(date +%s) - t0)) s, $n files: $(ls "$TMP/out" | tr '\n' ' ')"

# ---- 2. a GPU but no cuBLAS: stop cleanly, naming it ----
if unshare -m true 2>/dev/null; then
  mkdir -p "$TMP/fakebin" "$TMP/empty"
  cat >"$TMP/fakebin/nvidia-smi" <<'EOF'
#!/bin/sh
# a stand-in: one H200 listed, nothing else
case "$*" in *--query-gpu*) echo "NVIDIA H200, 580.159.04, 143771 MiB, 143000 MiB, 9.0" ;; esac
EOF
  chmod +x "$TMP/fakebin/nvidia-smi"
  hide=""
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib $(compgen -G '/usr/local/cuda-*/lib*'); do
    [ -d "$d" ] && hide="$hide $(readlink -f "$d")"
  done
  unshare -m bash -c 'for d in '"$(echo "$hide" | tr ' ' '\n' | sort -u | tr '\n' ' ')"'; do mount --bind "$1" "$d"; done
    PATH="$2:$PATH" CUDA_HOME= bash "$3/scripts/gpu_check.sh" "$4"' _ "$TMP/empty" "$TMP/fakebin" "$B" "$TMP/out2" >"$TMP/stdout2.txt" 2>&1
  rc=$?
  S2=$TMP/out2/summary.txt
  [ $rc -eq 2 ] || { echo "FAIL: exit status $rc without cuBLAS (expected 2)"; tail -5 "$TMP/stdout2.txt"; fail=1; }
  expect "$S2" '^STOPPED: this GPU machine lacks.*libcublas\.so\.13' "the stop naming cuBLAS"
  expect "$S2" 'gpu: NVIDIA H200' "the GPU line"
  ! grep -q '^2 gpu_smoke' "$S2" || { echo "FAIL: without cuBLAS the check went on past the preflight"; fail=1; }
  echo "no cuBLAS: exit $rc; $(grep -m1 '^STOPPED' "$S2" | cut -c1-120)"
else
  echo "no cuBLAS: not checked (unshare -m refused here)"
fi
exit $fail
