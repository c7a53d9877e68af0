#!/usr/bin/env bash
# Call 1: base (87798b3) against the rows factor's products on the DMMA shapes (f64, padded
# size 16), S = 1 n = 16 (and n = 8, 32 as controls), f64 and f32, two rounds; per-kernel
# profiles at N = 16384, n = 16; #11's n = 16 rows beside the peers; GPU tests, sanitizers.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
r() { timeout 150 "$@" > /dev/null 2>&1; }
s1() { r $B/$1 bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32 --precision $2 --methods blocktri-gpu --runs 10 --out-dir $OUT/$3; echo "$3 done"; }
for round in 1 2; do
  for v in blocktri-base blocktri; do s1 $v f64 f64-$v-$round; done
done
for v in blocktri-base blocktri; do s1 $v f32 f32-$v-1; done
for v in blocktri-base blocktri; do
  timeout 60 $B/$v profile --generate 16384,16 --repeat 3 > "$OUT/profile-$v.txt" 2>&1
  timeout 60 $B/$v profile --generate 4096,16 --repeat 3 --factor-solve > "$OUT/profile-fs4096-$v.txt" 2>&1
  echo "$v: $(tail -1 $OUT/profile-$v.txt)"
done
r $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 16 --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 10 --out-dir $OUT/grid-f64; echo "grid done"
for t in gpu_cholesky errors; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_small" "synccheck sanitize_cholesky_small" "racecheck sanitize_cholesky_small"; do set -- $tc
  timeout 200 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d f64-* f32-* grid-* profile-* test-*.log) && rm -rf $OUT/f64-* $OUT/f32-* $OUT/grid-* $OUT/profile-* $OUT/test-*.log
date -u >> "$OUT/device.txt"
