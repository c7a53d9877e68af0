#!/usr/bin/env bash
# Kernel families side by side (graph replays) with the GPU peers: which family wins per n.
# Writes one file, $OUT/families.md (the report tables of each run).
set -u
source "$(dirname "$0")/gpu-env.sh"
b=.gpu/bin/blocktri
S=${SUITES:-horizon,fp64-sweep}; P=${PREC:-f64}
tmp=$(mktemp -d)
for fam in rows panel generic; do
  $b bench --suites $S --methods blocktri-gpu --kernels $fam --precision $P --out-dir "$tmp/$fam" >/dev/null 2>&1
  cat "$tmp/$fam/report.md" >> "$OUT/families.md"
done
$b bench --suites $S --methods blocktri-gpu,vendor-schur,cudss --precision $P --out-dir "$tmp/peers" > /dev/null 2>&1
cat "$tmp/peers/report.md" >> "$OUT/families.md"
