#!/usr/bin/env bash
# Shared-memory carveout A/B (perf-notes entry 45): the same binary with
# BLOCKTRI_SMEM_CARVEOUT=default (the driver's split) and without (all shared), alternating.
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
sums() { # size tag env...
  g=$1; tag=$2; shift 2
  f="$OUT/sums-${g/,/x}-$tag.txt"
  env "$@" timeout 120 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1
  awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6 }
       END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "total %.1f us\n", t }' \
    "$f.raw" | sort -k4 -n -r > "$f"
  echo "== sums $g $tag: $(tail -1 $f)"
}
for g in 2048,128 1024,256; do
  sums $g default BLOCKTRI_SMEM_CARVEOUT=default; sums $g max X=1
done
for round in ${ROUNDS:-1}; do
  for v in default max; do
    env BLOCKTRI_SMEM_CARVEOUT=$v timeout 200 $b bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 \
      --methods blocktri-gpu --runs 3 --out-dir $OUT/sweep-$v-$round > $OUT/sweep-$v-$round.log 2>&1
    echo "== sweep $v round $round rc=$?"; grep -E "blocktri-gpu \| (factor|solve|factor\+solve) \|" $OUT/sweep-$v-$round/report.md | awk -F'|' '{printf "%s/%s %s %s; ", $4,$5,$7,$8}'; echo
    env BLOCKTRI_SMEM_CARVEOUT=$v timeout 200 $b bench --full --runs 5 --suites horizon --precision f64 --batches 1 \
      --nblocks 512,4096,16384 --block-sizes 16,32,64 --methods blocktri-gpu --out-dir $OUT/horizon-$v-$round > $OUT/horizon-$v-$round.log 2>&1
    echo "== horizon $v round $round rc=$?"; grep -E "blocktri-gpu \| (factor|solve|factor\+solve) \|" $OUT/horizon-$v-$round/report.md | awk -F'|' '{printf "%s/%s %s %s; ", $4,$5,$7,$8}'; echo
  done
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
