# Sourced by scripts/ptxas-registers.sh and scripts/sass-loops.sh (run from the repository
# root): NVIDIA's ptxas and nvdisasm on the build machine, and each kernel's PTX module as
# the host loads it. No GPU needed.
#   ptx_tools_arch                 the target architecture (BLOCKTRI_PTX_ARCHS, default sm_90)
#   ptx_tools_ptxas / _nvdisasm    a tool's path: $PTXAS / $NVDISASM, the PATH, or NVIDIA's
#                                  pip wheel downloaded once into target/ptxas
#   ptx_tools_kernels PATTERN...   builds the crate's PTX and prints one .ptx path per kernel
ptx_tools_arch() { local a=${BLOCKTRI_PTX_ARCHS:-sm_90}; echo "${a##*,}"; }

# ptx_tools_fetch WHEEL PATH-IN-WHEEL: the tool from NVIDIA's wheel, downloaded once.
ptx_tools_fetch() {
  local tool=target/ptxas/$2
  if [ ! -x "$tool" ]; then
    mkdir -p target/ptxas
    pip download "$1" --no-deps -q -d target/ptxas >&2
    (cd target/ptxas && for w in ./"${1//-/_}"-*.whl; do unzip -q -o "$w" "$2"; done && chmod +x "$2")
  fi
  echo "$tool"
}

ptx_tools_ptxas() {
  [ -n "${PTXAS:-}" ] && { echo "$PTXAS"; return; }
  command -v ptxas || ptx_tools_fetch nvidia-cuda-nvcc-cu12 nvidia/cuda_nvcc/bin/ptxas
}

ptx_tools_nvdisasm() {
  [ -n "${NVDISASM:-}" ] && { echo "$NVDISASM"; return; }
  command -v nvdisasm || ptx_tools_fetch nvidia-cuda-nvdisasm nvidia/cu13/bin/nvdisasm
}

ptx_tools_kernels() {
  local arch module out=target/ptxas/kernels
  arch=$(ptx_tools_arch)
  BLOCKTRI_PTX_ARCHS=$arch cargo build --release -q -p blocktri
  module=$(ls -t target/release/build/blocktri-*/out/blocktri_device."$arch".ptx | head -1)
  mkdir -p "$out"
  cargo run --release -q -p blocktri-ptx --example kernel_ptx -- "$module" "$out" "$@"
}
