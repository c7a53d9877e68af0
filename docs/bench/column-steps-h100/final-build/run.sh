#!/usr/bin/env bash
# The committed build (perf-notes entry 46): the tiled GPU tests as dispatched and forced,
# and the per-kernel sums at n = 256 and 1024.
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; t=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
timeout 120 $t/gpu_cholesky --test-threads=1 tiled > $OUT/test-tiled.log 2>&1
echo "tiled default rc=$? $(grep -E 'test result' $OUT/test-tiled.log | tail -1)"
BLOCKTRI_UPDATE_TRSM_NODES=1 BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 timeout 120 $t/gpu_cholesky --test-threads=1 tiled > $OUT/test-tiled-forced.log 2>&1
echo "tiled forced rc=$? $(grep -E 'test result' $OUT/test-tiled-forced.log | tail -1)"
for g in 1024,256 256,1024; do
  f="$OUT/sums-${g/,/x}.txt"; timeout 60 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1
  echo "== $g $(awk '$NF ~ /^[0-9.]+$/ && NF >= 7 && $2 ~ /^[0-9]+$/ { s[$1] += $NF; t += $NF } END { for (k in s) if (k ~ /update|trsm/) printf " %s %.0f", k, s[k]; printf " | total %.0f", t }' $f.raw)"
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
