#!/usr/bin/env bash
# Call 1: the blocked factor's products (m16n8k16) and strip trailing updates (m16n8k8) on
# the sm_90 DMMA shapes. base = 9d71bac; n1 = both, trailing items of 2 column tiles;
# n2 = n1 with 4 column tiles per trailing item; n3 = products only. OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee -a "$OUT/device.txt"
r() { timeout 150 "$@" > /dev/null 2>&1; }
sum() { echo "$1: $(grep -E '\| (factor|solve|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s %s | ", $2, $3, $4, $5, $6, $7}')"; }
for v in base n1 n2 n3; do
  r $B/blocktri-$v bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/b-$v-1; sum b-$v-1
done
for t in gpu_cholesky errors; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tool in memcheck synccheck racecheck; do for c in sanitize_cholesky_every_family sanitize_cholesky_large; do
  [ $tool = racecheck ] && [ $c = sanitize_cholesky_large ] && continue
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/$tool-$c.log" 2>&1
  echo "$tool $c rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-$c.log" | tr '\n' ' ')"
done; done
for v in base n1 n2 n3; do
  r $B/blocktri-$v bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/b-$v-2; sum b-$v-2
done
for v in base n1; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-$v; sum batch-$v; done
r $B/blocktri-n1 bench --full --suites fp64-sweep --block-sizes 32,64 --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 5 --out-dir $OUT/peers-n1; sum peers-n1
tar -C $OUT -cJf $OUT/bench.tar.xz $(cd $OUT && ls -d b-* batch-* peers-*) && rm -rf $OUT/b-* $OUT/batch-* $OUT/peers-*
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 20000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
date -u >> "$OUT/device.txt"
