#!/usr/bin/env bash
# Call 3: base / b (pairs in f32 too, batch 4) / c (pairs in f64 only, panel loads batched by 8)
# / d (pairs in f64 only, batch 4): per-level profiles and blocktri-gpu benches. OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee -a "$OUT/device.txt"
for t in gpu_cholesky; do
  timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for p in f64 f32; do for g in 64,64 4096,64 8192,32 512,32; do for v in base c d; do f=$OUT/profile-$p-${g/,/x}-$v.txt
  timeout 60 $B/blocktri-$v profile --precision $p --generate $g --repeat 3 > $f 2>&1
  echo "$p $g $v: $(awk '$1 ~ /factor_blocked/ {printf "L%s %s | ", $2, $NF}' $f) $(grep 'sum of' $f)"; done; done; done
r() { timeout 250 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s | ", $2, $3, $4, $6, $7}')"; }
for round in 1 2; do for v in base c d; do for p in f64 f32; do
  r $B/blocktri-$v bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 32,64,128 --precision $p --methods blocktri-gpu --runs 5 --out-dir $OUT/b-$p-$v-$round
  sum b-$p-$v-$round
done; done; done
for v in base c d; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64,f32 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-$v; sum batch-$v; done
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d b-* batch-* profile-*) && rm -rf $OUT/b-* $OUT/batch-* $OUT/profile-*
date -u >> "$OUT/device.txt"
