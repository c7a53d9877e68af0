#!/usr/bin/env bash
# The staged per-level rows factor (issue #11): tests and sanitizers with every level on
# the per-level kernels, per-level profiles and the benchmark with BLOCKTRI_ROWS_STAGED=off
# alternating in the same binary, then the peers.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/b"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
export BLOCKTRI_BIN=$PWD/$B/blocktri
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests sanitize profile ab}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_cholesky errors recovery gpu_transfers}; do
  echo "== $t"; timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1; echo "rc=$?"; grep -E "test result|FAILED|panicked" "$OUT/test-$t.log" | head -5
done
echo "== gpu_cholesky, every level per-level (BLOCKTRI_DATAFLOW_PER_SM=0)"
BLOCKTRI_DATAFLOW_PER_SM=0 timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/test-gpu_cholesky-levels.log" 2>&1; echo "rc=$?"
grep -E "test result|FAILED|panicked" "$OUT/test-gpu_cholesky-levels.log" | head -5
fi
if [[ " $steps " == *" sanitize "* ]]; then
for f in sanitize_cholesky_small sanitize_cholesky_every_family; do for tool in memcheck racecheck synccheck; do
  BLOCKTRI_DATAFLOW_PER_SM=0 timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 .gpub/tests/gpu_sanitize $f > "$OUT/san-$f-$tool.log" 2>&1
  echo "$f $tool rc=$?"; grep -E "ERROR SUMMARY|test result" "$OUT/san-$f-$tool.log" | head -2
done; done
fi
if [[ " $steps " == *" profile "* ]]; then
for g in 16384,16 16384,8 4096,16 16384,32 16384,4; do for v in on off; do
  echo "== $v $g"; BLOCKTRI_ROWS_STAGED=$v timeout 60 $B/blocktri profile --generate $g --repeat 3 2>&1 | grep -E "factor_|sum of"
done; done > "$OUT/profile.txt" 2>&1
grep -E "^==|factor_rows|sum of" "$OUT/profile.txt" | head -80
fi
if [[ " $steps " == *" ab "* ]]; then
for i in ${ROUNDS:-1 2}; do for v in on off; do
  BLOCKTRI_ROWS_STAGED=$v timeout 280 $B/blocktri bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 4,8,16,32 --precision ${PRECS:-f64} --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/$v-$i" > "$OUT/bench-$v-$i.log" 2>&1
  echo "== bench $v $i rc=$?"; grep -E "blocktri-gpu \| (factor|solve|factor\+solve) \|" "$OUT/b/$v-$i/report.md" | awk -F'|' '{printf "N=%s n=%s %s %s\n", $3, $4, $6, $7}' | head -30
done; done
fi
if [[ " $steps " == *" peers "* ]]; then
timeout 500 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32 --precision ${PRECS:-f64} --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 10 --out-dir "$OUT/b/peers" > "$OUT/bench-peers.log" 2>&1
echo "== peers rc=$?"
fi
[ -d "$OUT/b" ] && ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . && rm -rf "$OUT/b"
tar czf /tmp/results.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/results.tgz "$OUT/results.tgz"
