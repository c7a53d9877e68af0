#!/usr/bin/env bash
# Call 3: n5 = the committed 7e5986c (n4 with the products' item loop shared); n6 = n5 with
# the strip rows as one m16n8k8 product with the diagonal tile's inverse (sm_90, f64).
# f64 base / n5 / n6, f32 base / n5, tests and sanitizers on n6. OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
r() { timeout 150 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s | ", $2, $3, $4, $6, $7}')"; }
s1() { r $B/blocktri-$1 bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --precision $2 --methods blocktri-gpu --runs 5 --out-dir $OUT/$3; sum $3; }
for v in base n5 n6; do s1 $v f64 b-f64-$v-1; done
for v in n5 n6; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-f64-$v; sum batch-f64-$v; done
for v in base n5; do s1 $v f32 b-f32-$v-1; done
for v in base n5; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f32 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-f32-$v; sum batch-f32-$v; done
for v in base n5 n6; do s1 $v f64 b-f64-$v-2; done
for v in base n5; do s1 $v f32 b-f32-$v-2; done
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d b-* batch-*) && rm -rf $OUT/b-* $OUT/batch-*
for t in gpu_cholesky errors; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tool in memcheck synccheck; do for c in sanitize_cholesky_every_family sanitize_cholesky_large; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/$tool-$c.log" 2>&1
  echo "$tool $c rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/$tool-$c.log" | tr '\n' ' ')"
done; done
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 20000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
date -u >> "$OUT/device.txt"
