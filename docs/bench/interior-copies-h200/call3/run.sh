#!/usr/bin/env bash
# Call 3: the committed form (copy plans: Split for the FP64 tensor-core products, Branch
# for the f32 FMA ones, Checked for TF32) beside the peers at n = 512, 1024; against the
# base (277e14e) at every tiled size and precision; GPU tests and sanitizers.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
row() { grep -E "$2 \| (factor|factor\+solve) \|" $1/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}'; }
timeout 200 $B/blocktri bench --full --suites fp64-sweep --block-sizes 512,1024 --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 3 --out-dir $OUT/peers > /dev/null 2>&1
grep -E '\| (factor|solve|factor\+solve) \|' $OUT/peers/report.md | awk -F'|' '{printf "n=%s %s %s %s %s\n", $4, $5, $6, $7, $9}'
for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 150 $bin bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $OUT/f64-$v > /dev/null 2>&1
  echo "f64 $v: $(row $OUT/f64-$v blocktri-gpu)"
  timeout 60 $bin bench --full --suites fp64-sweep --block-sizes 128,256 --precision f32 --methods blocktri-gpu --runs 3 --out-dir $OUT/f32-$v > /dev/null 2>&1
  echo "f32 $v: $(row $OUT/f32-$v blocktri-gpu)"
  timeout 60 $bin bench --full --suites fp64-sweep --block-sizes 128,256 --precision f32 --f32-products tf32 --methods blocktri-gpu --runs 3 --out-dir $OUT/tf32-$v > /dev/null 2>&1
  echo "tf32 $v: $(row $OUT/tf32-$v blocktri-gpu-tf32)"
done
for t in gpu_cholesky errors gpu_mixed; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_tiled" "memcheck sanitize_cholesky_tiled_tf32" "racecheck sanitize_cholesky_tiled" "synccheck sanitize_cholesky_tiled"; do set -- $tc
  timeout 120 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
BLOCKTRI_WIDE_MIN_BLOCK=0 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_UPDATE=64 timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 --exact sanitize_cholesky_tiled > "$OUT/memcheck-wide.log" 2>&1
echo "memcheck wide-forced rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck-wide.log" | tr '\n' ' ')"
mkdir -p $OUT/tests && mv $OUT/test-*.log $OUT/tests/
for f in "$OUT"/*.log "$OUT"/tests/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d peers f64-* f32-* tf32-* tests) && rm -rf $OUT/peers $OUT/f64-* $OUT/f32-* $OUT/tf32-* $OUT/tests
date -u >> "$OUT/device.txt"
