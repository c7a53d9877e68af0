#!/usr/bin/env bash
# Registers, spills and stack of kernels as ptxas compiles them, on this machine (no GPU):
#   scripts/ptxas-registers.sh 'tiled_prep*' factor_blocked64_f64 ...
# Builds the crate's PTX (BLOCKTRI_PTX_ARCHS, default sm_90), splits out each kernel's
# module as the host loads it, and runs ptxas -v for that architecture (scripts/ptx-tools.sh
# finds or downloads ptxas). .maxnreg caps from build.rs are in the PTX.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 KERNEL[*]..." >&2; exit 2; }
. scripts/ptx-tools.sh
arch=$(ptx_tools_arch); ptxas=$(ptx_tools_ptxas)
ptx_tools_kernels "$@" | while read -r ptx; do
  # One line per kernel: its registers, then stack and spill bytes of it and of each
  # function it calls that ptxas did not inline.
  "$ptxas" -arch="$arch" -v "$ptx" -o /dev/null 2>&1 | awk -v k="$(basename "$ptx" .ptx)" '
    /Function properties for/ { f = $NF }
    /stack frame/ { gsub(/^ +/, ""); frames = frames "\n  " (f == k ? "(kernel)" : f) ": " $0 }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15) }
    END { printf "%s: %s registers%s\n", k, regs, frames }'

done
