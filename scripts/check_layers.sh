#!/usr/bin/env bash
# scripts/check_layers.sh - no include runs from a lower layer to a higher one (a ctest test; run it by hand too).
#
#   tensor <- autograd <- nn <- optim <- apps        tasks beside (plain C++ data; only apps use it)
#   cuda: the backend behind tensor/backend.h (tensor/ and cuda/ only)
#   within nn/:  the base (nn/*.h, nn/*.cpp)        includes only the base (nn/registry.cpp: every family)
#                nn/fused/ (hand-written kernels)   the base, fused, and the op contracts of the families (*_ops.h)
#                a family (attention, ssm, ...)     the base, fused, and its own folder
#                nn/models/                         the base, fused, every family
#                nn/onnx/ (the ONNX graph writer)   the base only; every nn folder may include it (export_onnx)
#   apps/common (the harness)                       everything below, tasks, and apps/common
#   apps/<app>                                      everything below, tasks, apps/common and its own folder
#   apps/explain                                    also the apps whose models it opens (lra_benchmark, fpt,
#                                                   pretrained_convs); no app includes explain
#   apps/generate                                   also lra_benchmark, whose spt-causal cells it samples from
# Tests, benchmarks and fuzz targets may include anything. Prints each offending include; exits 1 if there is one.
set -uo pipefail
cd "$(dirname "$0")/.."

allowed() {  # allowed <file> <included path>
  local f=$1 inc=$2 top=${1%%/*} itop=${2%%/*}
  case "$top" in
    tensor)   [[ $itop == tensor ]] ;;
    autograd) [[ $itop == tensor || $itop == autograd ]] ;;
    optim)    [[ $itop == tensor || $itop == autograd || $itop == nn || $itop == optim ]] ;;
    tasks)    [[ $itop == tasks ]] ;;
    cuda)     [[ $itop == tensor || $itop == cuda ]] ;;
    nn)       allowed_nn "$f" "$inc" ;;
    apps)
      [[ $itop == tensor || $itop == autograd || $itop == nn || $itop == optim || $itop == tasks ]] && return 0
      [[ $inc == apps/common/* ]] && return 0
      local app=${f#apps/}; app=${app%%/*}
      [[ $app == generate && $inc == apps/lra_benchmark/* ]] && return 0
      [[ $app == explain && ( $inc == apps/lra_benchmark/* || $inc == apps/fpt/* || $inc == apps/pretrained_convs/* ) ]] &&
        return 0
      [[ $inc == apps/$app/* ]] ;;
    *) return 0 ;;
  esac
}

allowed_nn() {
  local f=$1 inc=$2
  [[ $inc == tensor/* || $inc == autograd/* ]] && return 0
  [[ $inc == nn/* ]] || return 1
  [[ $inc == nn/onnx/* ]] && return 0  # the ONNX writer (base-level: it includes only the base), for every export_onnx
  local rest=${f#nn/} irest=${inc#nn/}
  local fam=base ifam=base
  [[ $rest == */* ]] && fam=${rest%%/*}
  [[ $irest == */* ]] && ifam=${irest%%/*}
  case "$fam" in
    base)   [[ $ifam == base || $f == nn/registry.cpp ]] ;;
    fused)  [[ $ifam == base || $ifam == fused || $inc == *_ops.h ]] ;;
    models) [[ $ifam != models || $fam == models ]] ;;
    *)      [[ $ifam == base || $ifam == fused || $ifam == "$fam" ]] ;;
  esac
}

bad=0
while IFS= read -r f; do
  while IFS= read -r inc; do
    [[ $inc == */* ]] || continue  # "config.h": a file of the same folder
    if ! allowed "$f" "$inc"; then
      echo "$f includes $inc: against the layering (scripts/check_layers.sh)"
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(git ls-files -- tensor autograd nn optim tasks cuda apps 2>/dev/null | grep -E '\.(h|cpp|cu|cuh)$' ||
         find tensor autograd nn optim tasks cuda apps -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh')
[[ $bad == 0 ]] && echo "layering: every include runs downward"
exit $bad
