#!/usr/bin/env bash
# The machine code of kernels' inner loops, on this machine (no GPU):
#   scripts/sass-loops.sh tiled_wide_neighbours_f64 'tiled_update*_f64' ...
# For each kernel: ptxas compiles its module (as ptxas-registers.sh), nvdisasm writes the
# SASS with its control words to target/ptxas/sass/KERNEL.sass, and scripts/sass_loops.py
# prints every loop that does arithmetic: instructions per iteration, the stall cycles the
# control words encode (a lower bound on a warp's cycles per iteration), and its tensor-core
# operations, FMAs, NOPs, shared loads, asynchronous copies, barriers, moves and spills.
# docs/perf-notes.md, entry 76, found the products' copy arithmetic this way.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 KERNEL[*]..." >&2; exit 2; }
. scripts/ptx-tools.sh
arch=$(ptx_tools_arch); ptxas=$(ptx_tools_ptxas); nvdisasm=$(ptx_tools_nvdisasm)
out=target/ptxas/sass; mkdir -p "$out"
ptx_tools_kernels "$@" | while read -r ptx; do
  k=$(basename "$ptx" .ptx)
  "$ptxas" -arch="$arch" "$ptx" -o "$out/$k.cubin"
  "$nvdisasm" -hex "$out/$k.cubin" 2>/dev/null > "$out/$k.sass"
  echo "$k:"; python3 scripts/sass_loops.py "$out/$k.sass"
done
