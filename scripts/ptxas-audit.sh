#!/usr/bin/env bash
# The kernels that ptxas compiles with a call to a function it did not inline, a stack
# frame or spills (sm_90 by default, BLOCKTRI_PTX_ARCHS), one line each; no GPU needed.
#   scripts/ptxas-audit.sh            every kernel (~5 min on two cores)
#   scripts/ptxas-audit.sh 'solve_*'  those matching
# A called node body under a register cap spilled inside the blocked factor's strip loop
# unnoticed over several sessions (docs/perf-notes.md, entry 104): run this after
# changing a kernel's body.
# core::panicking's functions (never reached on the device) are not counted as calls.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- '*'
scripts/ptxas-registers.sh "$@" | awk '
  function flush() {
    if (k != "" && (calls || stack || spill))
      printf "%-48s %3d registers  stack %5d  spill %6d  calls %d\n", k, regs, stack, spill, calls
  }
  /^[^ ].*: [0-9]+ registers/ { flush(); k = $1; sub(/:$/, "", k); regs = $2; calls = stack = spill = 0; next }
  /bytes stack frame/ {
    if ($0 ~ /panicking/) next
    if ($1 != "(kernel):") calls++
    stack += $2; spill += $6 + $10
  }
  END { flush() }'
