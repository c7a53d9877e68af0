#!/usr/bin/env bash
# Kernel families side by side (graph replays) with the GPU peers: which family wins per n.
# Writes one file, $OUT/families.md (the report tables of each run).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
b=.gpu/bin/blocktri
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
S=${SUITES:-horizon,fp64-sweep}; P=${PREC:-f64}
tmp=$(mktemp -d)
for fam in rows panel generic; do
  $b bench --suites $S --methods blocktri-gpu --kernels $fam --precision $P --out-dir "$tmp/$fam" >/dev/null 2>&1
  cat "$tmp/$fam/report.md" >> "$OUT/families.md"
done
$b bench --suites $S --methods blocktri-gpu,vendor-schur,cudss --precision $P --out-dir "$tmp/peers" > /dev/null 2>&1
cat "$tmp/peers/report.md" >> "$OUT/families.md"
