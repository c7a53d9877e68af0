#!/usr/bin/env bash
# The fused column steps' per-level rule (perf-notes entry 46): per-level sums with the
# measured rule against a flat 8-node threshold, then the sweep of the final build.
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
for g in 512,512 256,1024; do
  for v in rule flat8; do
    f="$OUT/sums-${g/,/x}-$v.txt"
    if [ $v = flat8 ]; then BLOCKTRI_UPDATE_TRSM_NODES=8 timeout 100 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1
    else timeout 100 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1; fi
    echo "== $g $v $(awk '$NF ~ /^[0-9.]+$/ && NF >= 7 && $2 ~ /^[0-9]+$/ { s[$2] += $NF; t += $NF } END { for (l = 0; l < 12; l++) if (l in s) printf " %.0f", s[l]; printf " | total %.0f", t }' $f.raw)"
  done
done
timeout 200 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024,2048 --precision f64 \
  --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-final > $OUT/sweep-final.log 2>&1
echo "sweep final rc=$?"; grep -E "blocktri-gpu \| (factor|solve|factor\+solve) \|" $OUT/sweep-final/report.md
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
