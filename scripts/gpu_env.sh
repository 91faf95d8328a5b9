# scripts/gpu_env.sh - sourced (bash) by scripts/gpu_bundle.sh, scripts/check_bundle.sh and scripts/gpu_check.sh: what a
# bundle may take from the machine it runs on, where the GPU libraries are found there, and the environment a
# bundled binary runs in. One file, so the bundle is packed, tested and run against the same rules.
#
#   dl_allowed SONAME          true for the libraries a bundle never carries: glibc's (libc, libm, libdl, libpthread,
#                              librt, the loader, and libresolv / libutil / libanl, which must match the machine's libc),
#                              libstdc++ and libgcc_s, the CUDA driver (libcuda), and cuBLAS / cuBLASLt / cuFFT / NCCL
#                              (hundreds of MB each; the GPU machine has them: the toolkit or the pip wheels)
#   dl_find_lib SONAME         prints "PATH<tab>WHERE" for the first file named SONAME in: the toolkit's lib folders
#                              ($CUDA_HOME, /usr/local/cuda*), the driver's (/usr/local/nvidia), the loader's cache
#                              (ldconfig -p), and every python's site-packages nvidia/*/lib (the pip wheels: the only
#                              place NCCL is on the GPU machine); nothing (status 1) when none has it
#   dl_gpu_libs SONAME...      finds each, prints one line per library (where it was found), puts the folders on
#                              LD_LIBRARY_PATH (first), and sets DL_GPU_MISSING to the sonames not found
#   dl_bundle_env BUNDLE       the environment of a bundled binary: OpenMPI's components and help files from the
#                              bundle, and a one-rank MPI job without mpirun that starts no orted daemon
#                              (ess_singleton_isolated; docs/cuda.md "When a device is lent" says why)

DL_ALLOW_RE='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libcuda\.so\.1|libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+|libcufft\.so\.[0-9]+|libnccl\.so\.[0-9]+)$'

dl_allowed() { [[ $1 =~ $DL_ALLOW_RE ]]; }

# The folders where a python keeps its packages (each python3 on the PATH and the GPU image's venv).
dl_site_packages() {
  local py
  for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    timeout 20 "$py" -c 'import site, sys
for p in site.getsitepackages() + [site.getusersitepackages()]: print(p)' 2>/dev/null
  done
  compgen -G '/opt/*/.venv/lib/python3*/site-packages' || true
  compgen -G '/usr/local/lib/python3*/dist-packages' || true
}

dl_find_lib() {
  local so=$1 d f
  local -a dirs=()
  [ -n "${CUDA_HOME:-}" ] && dirs+=("$CUDA_HOME/lib64" "$CUDA_HOME/lib")
  dirs+=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib)
  for d in /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib; do [ -d "$d" ] && dirs+=("$d"); done
  dirs+=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib)
  for d in "${dirs[@]}"; do
    [ -e "$d/$so" ] && { printf '%s\t%s\n' "$d/$so" "toolkit/driver folder"; return 0; }
  done
  f=$(ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so && /x86-64/ {print $NF; exit}')
  [ -n "$f" ] && [ -e "$f" ] && { printf '%s\t%s\n' "$f" "ldconfig -p"; return 0; }
  while read -r d; do
    for f in "$d"/nvidia/*/lib/"$so"; do
      [ -e "$f" ] && { printf '%s\t%s\n' "$f" "pip wheel"; return 0; }
    done
  done < <(dl_site_packages | awk '!seen[$0]++')
  return 1
}

dl_gpu_libs() {
  local so hit dir
  local -a dirs=()
  DL_GPU_MISSING=""
  for so in "$@"; do
    if hit=$(dl_find_lib "$so"); then
      printf '    %-22s %s (%s)\n' "$so" "${hit%%$'\t'*}" "${hit#*$'\t'}"
      dir=$(dirname "${hit%%$'\t'*}")
      [[ " ${dirs[*]} " == *" $dir "* ]] || dirs+=("$dir")
    else
      printf '    %-22s NOT FOUND (toolkit lib64, /usr/local/nvidia, ldconfig -p, site-packages nvidia/*/lib)\n' "$so"
      DL_GPU_MISSING="$DL_GPU_MISSING $so"
    fi
  done
  local joined
  joined=$(IFS=:; echo "${dirs[*]}")
  [ -n "$joined" ] && export LD_LIBRARY_PATH="$joined${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  DL_GPU_MISSING=${DL_GPU_MISSING# }
}

dl_bundle_env() {
  local b=$1
  export OMPI_MCA_mca_base_component_path="$b/lib/openmpi"
  export OMPI_MCA_mca_base_component_show_load_errors=0
  export OMPI_MCA_ess_singleton_isolated=1
  export OPAL_PKGDATADIR="$b/share/openmpi"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
