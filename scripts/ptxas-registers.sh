#!/usr/bin/env bash
# Registers, spills and stack of kernels as ptxas compiles them, on this machine (no GPU):
#   scripts/ptxas-registers.sh 'tiled_prep*' factor_blocked64_f64 ...
# Builds the crate's PTX (BLOCKTRI_PTX_ARCHS, default sm_90), splits out each kernel's
# module as the host loads it, and runs ptxas -v for that architecture. ptxas comes from
# $PTXAS, the PATH, or NVIDIA's nvidia-cuda-nvcc-cu12 wheel (downloaded once into
# target/ptxas; pip must reach its registry). .maxnreg caps from build.rs are in the PTX.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 KERNEL[*]..." >&2; exit 2; }
arch=${BLOCKTRI_PTX_ARCHS:-sm_90}; arch=${arch##*,}
ptxas=${PTXAS:-$(command -v ptxas || true)}
if [ -z "$ptxas" ]; then
  ptxas=target/ptxas/nvidia/cuda_nvcc/bin/ptxas
  if [ ! -x "$ptxas" ]; then
    mkdir -p target/ptxas
    pip download nvidia-cuda-nvcc-cu12 --no-deps -q -d target/ptxas
    (cd target/ptxas && unzip -q -o ./*.whl 'nvidia/cuda_nvcc/bin/ptxas' && chmod +x nvidia/cuda_nvcc/bin/ptxas)
  fi
fi
BLOCKTRI_PTX_ARCHS=$arch cargo build --release -q -p blocktri
module=$(ls -t target/release/build/blocktri-*/out/blocktri_device."$arch".ptx | head -1)
out=target/ptxas/kernels; mkdir -p "$out"
cargo run --release -q -p blocktri-ptx --example kernel_ptx -- "$module" "$out" "$@" | while read -r ptx; do
  # One line per kernel: its registers, then stack and spill bytes of it and of each
  # function it calls that ptxas did not inline.
  "$ptxas" -arch="$arch" -v "$ptx" -o /dev/null 2>&1 | awk -v k="$(basename "$ptx" .ptx)" '
    /Function properties for/ { f = $NF }
    /stack frame/ { gsub(/^ +/, ""); frames = frames "\n  " (f == k ? "(kernel)" : f) ": " $0 }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15) }
    END { printf "%s: %s registers%s\n", k, regs, frames }'

done
