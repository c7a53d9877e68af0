#!/usr/bin/env bash
# SASS of the kernels and Nsight Compute stall locations for the factor kernel.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
ptxas -arch=sm_90 -v .gpu/ptx/device.sm_90.ptx -o /tmp/k.cubin 2> "$OUT/ptxas.txt"
cuobjdump -sass /tmp/k.cubin > /tmp/k.sass
awk '/Function : factor_level_f64/{p=1} p&&/Function : /&&!/factor_level_f64/{p=0} p' /tmp/k.sass > "$OUT/factor_f64.sass"
wc -l "$OUT/factor_f64.sass"
ncu --clock-control none -k regex:factor_level_f64 -s 8 -c 1 --section SourceCounters --section InstructionStats --section WarpStateStats --print-details all \
  .gpu/bin/blocktri profile --generate 4096,16 --repeat 1 > "$OUT/ncu-source.txt" 2>&1
grep -E "Executed Instructions|Issued Instructions|Stall|stall" "$OUT/ncu-source.txt" | head -40
