#!/usr/bin/env bash
# Call 4: the committed form (call 3's, with four warps per node at padded sizes 8 / 16 for
# groups of 32 columns). GPU tests and sanitizers; f64 and f32 at n = 8 / 16 with k = 1..32; the
# peers at k = 1, 4, 16, 32, f64.
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
for p in f64 f32; do
  timeout 100 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 --methods blocktri-gpu --runs 10 \
    --nrhs 1,4,8,16,32 --precision $p --out-dir "$OUT/d-$p" > "$OUT/d-$p.txt" 2>&1; echo "$p rc=$?"
  grep -E " solve k=" "$OUT/d-$p.txt"
done
timeout 200 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 8,16 --nrhs 1,4,16,32 \
  --methods blocktri-gpu,cudss,vendor-schur --out-dir "$OUT/peers" > "$OUT/peers.txt" 2>&1; echo "peers rc=$?"
grep -E " solve k=| solve  " "$OUT/peers.txt" | head -80
(cd $OUT && tar -cJf bench.tar.xz d-* peers && rm -rf d-f64 d-f32 peers)
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls *.txt *.log)
(cd $OUT && rm -f test-*.log memcheck.log synccheck.log racecheck.log d-*.txt)
date -u >> "$OUT/device.txt"
