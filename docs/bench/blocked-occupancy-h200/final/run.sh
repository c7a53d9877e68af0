#!/usr/bin/env bash
# Blocked factor per-level block sizes and register caps (perf-notes entry 72): GPU tests,
# sanitizers, and the benchmark with peers (base = 10eb409 as blocktri-base). OUT must be set.
# Usage: OUT=... bash .gpub/final.sh [tests] [sanitize] [bench]
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee -a "$OUT/device.txt"
steps=${*:-tests sanitize bench}
if [[ " $steps " == *" tests "* ]]; then
  for t in gpu_cholesky errors recovery; do
    timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
    echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  done
fi
if [[ " $steps " == *" sanitize "* ]]; then
  for tool in memcheck racecheck synccheck; do for c in sanitize_cholesky_every_family sanitize_cholesky_large; do
    timeout 250 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/$tool-$c.log" 2>&1
    echo "$tool $c rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-$c.log" | tr '\n' ' ')"
  done; done
  for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 40000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
fi
if [[ " $steps " == *" bench "* ]]; then
  for p in f64 f32; do
    timeout 250 $B/blocktri bench --full --suites fp64-sweep --block-sizes 32,64 --precision $p --methods blocktri-gpu,vendor-schur,cudss --runs 5 --out-dir $OUT/sweep-$p > /dev/null 2>&1
    timeout 100 $B/blocktri-base bench --full --suites fp64-sweep --block-sizes 32,64 --precision $p --methods blocktri-gpu --runs 5 --out-dir $OUT/sweep-$p-base > /dev/null 2>&1
    for d in sweep-$p sweep-$p-base; do echo "$d: $(grep -E '\| (factor|solve|factor\+solve) \|' $OUT/$d/report.md | awk -F'|' '{printf "n=%s %s %s %s | ", $4, $5, $6, $7}')"; done
  done
  for v in new base; do bin=$B/blocktri; m=blocktri-gpu,cudss; [ $v = base ] && bin=$B/blocktri-base && m=blocktri-gpu
    timeout 250 $bin bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 32,64 --precision f64 --methods $m --runs 5 --out-dir $OUT/hz-$v > /dev/null 2>&1
    echo "hz $v: $(grep -E '\| (factor|solve|factor\+solve) \|' $OUT/hz-$v/report.md | awk -F'|' '{printf "N=%s n=%s %s %s %s | ", $3, $4, $5, $6, $7}')"
  done
fi
date -u >> "$OUT/device.txt"
