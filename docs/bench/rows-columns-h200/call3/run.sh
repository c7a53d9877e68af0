#!/usr/bin/env bash
# Call 3: the committed form (column solves after the rows factor from k = 3 at padded size 16
# (f32: 4), at 8 from 3 up to 4096 blocks and from 5 (f32: 6) beyond; padded size 8 never stages;
# the rows factor interlaces at most 4 columns where the column solves follow). GPU tests and
# sanitizers on it; 128 threads per node at padded sizes 8 / 16 (blocktri-t128) against 64; the
# peers at k = 1, 4, 16, 32, n = 8 / 16.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:${LD_LIBRARY_PATH:-}
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
timeout 150 $T/gpu_cholesky --include-ignored --test-threads=3 > "$OUT/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_cholesky.log" | head -12
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_column_solves > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
G="--suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 --methods blocktri-gpu --runs 10"
for bin in blocktri blocktri-t128; do
  timeout 100 $B/$bin bench $G --nrhs 4,8,32 --out-dir "$OUT/t-$bin" > "$OUT/t-$bin.txt" 2>&1; echo "$bin rc=$?"
  grep -E " solve k=" "$OUT/t-$bin.txt"
done
timeout 200 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 --nrhs 1,4,16,32 \
  --methods blocktri-gpu,cudss,vendor-schur --out-dir "$OUT/peers" > "$OUT/peers.txt" 2>&1; echo "peers rc=$?"
grep -E " solve k=| solve  " "$OUT/peers.txt" | head -80
(cd $OUT && tar -cJf bench.tar.xz t-* peers && rm -rf t-blocktri t-blocktri-t128 peers)
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls *.txt *.log)
(cd $OUT && rm -f test-*.log memcheck.log synccheck.log racecheck.log t-*.txt)
date -u >> "$OUT/device.txt"
