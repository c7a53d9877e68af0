#!/usr/bin/env bash
# Call 2: n4 = n1 + the chain engine's D -= K K^T on 16 x 8 tiles (m16n8k16). Benches
# against base (9d71bac) and n1, per-level profiles of n4, tests and sanitizers on n4.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
r() { timeout 150 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s | ", $2, $3, $4, $6, $7}')"; }
for v in base n4; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-$v; sum batch-$v; done
for v in base n1 n4; do
  r $B/blocktri-$v bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/b-$v; sum b-$v
done
for v in base n4; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch2-$v; sum batch2-$v; done
for g in 4096,64 8192,32; do timeout 60 $B/blocktri-n4 profile --generate $g --repeat 3 > $OUT/profile-$g.txt 2>&1; done
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d b-* batch-* profile-*) && rm -rf $OUT/b-* $OUT/batch-*
for t in gpu_cholesky errors; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tool in memcheck synccheck; do for c in sanitize_cholesky_every_family sanitize_cholesky_large; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/$tool-$c.log" 2>&1
  echo "$tool $c rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/$tool-$c.log" | tr '\n' ' ')"
done; done
cat $OUT/profile-4096,64.txt | head -80
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_cholesky_every_family > "$OUT/racecheck.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|test result' "$OUT/racecheck.log" | tr '\n' ' ')"
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 20000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
date -u >> "$OUT/device.txt"
