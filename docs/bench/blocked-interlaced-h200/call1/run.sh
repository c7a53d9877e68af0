#!/usr/bin/env bash
# Call 1: base (36144ae) against the interlaced blocked factor ("new"), S = 1, n = 32 / 64,
# N = 512 / 4096 / 16384 and the fp64 sweep sizes, f64 and f32, two rounds; peers at the
# sweep sizes; batches (chain engine, unchanged) as a control; GPU tests and sanitizers.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
r() { timeout 150 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E 'blocktri-gpu \| (factor|solve|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $5, $6}')"; }
s1() { r $B/$1 bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --precision $2 --methods blocktri-gpu --runs 5 --out-dir $OUT/$3; sum $3; }
for round in 1 2; do
  for v in blocktri-base blocktri; do s1 $v f64 f64-$v-$round; done
  for v in blocktri-base blocktri; do s1 $v f32 f32-$v-$round; done
done
r $B/blocktri bench --full --suites fp64-sweep --block-sizes 32,64 --precision f64 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 5 --out-dir $OUT/peers
grep -E '\| (factor|solve|factor\+solve) \|' $OUT/peers/report.md | awk -F'|' '{printf "N=%s n=%s %s %s %s %s\n", $3, $4, $2, $5, $6, $9}'
for v in blocktri-base blocktri; do r $B/$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-$v; sum batch-$v; done
for t in gpu_cholesky errors gpu_transfers; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_every_family" "memcheck sanitize_cholesky_large" "memcheck sanitize_segments_on_the_edges" "racecheck sanitize_cholesky_every_family" "synccheck sanitize_cholesky_every_family" "synccheck sanitize_cholesky_large"; do set -- $tc
  timeout 120 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
mkdir -p $OUT/tests && mv $OUT/test-*.log $OUT/tests/
for f in "$OUT"/*.log "$OUT"/tests/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d f64-* f32-* peers batch-* tests) && rm -rf $OUT/f64-* $OUT/f32-* $OUT/peers $OUT/batch-* $OUT/tests
date -u >> "$OUT/device.txt"
