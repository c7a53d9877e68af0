#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
tar -C .gpub -xJf .gpub/bundle.tar.xz
b=.gpub/bin/blocktri
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
timeout 280 .gpub/tests/gpu_cholesky 2>&1 | tail -5 | tee $OUT/tests.log
for tool in memcheck racecheck synccheck; do
  echo "== $tool" | tee -a $OUT/san.log
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_chain 2>&1 | tail -2 | tee -a $OUT/san.log
done
run() { # prec fam methods sizes batches tag
  timeout 150 $b bench --full --suites batch --batches $5 --nblocks 64 --block-sizes $4 --precision $1 --methods $3 --kernels $2 --runs 5 \
    --out-dir $OUT/b-$6 > $OUT/b-$6.log 2>&1; echo "$6 rc=$?"
}
run f64 chain blocktri-gpu,vendor-seq 24,32 132,264,528,1024,4096 f64-chain-s
run f64 blocked blocktri-gpu 24,32 132,264,528,1024,4096 f64-nd-s
run f64 chain blocktri-gpu,vendor-seq 48,64 132,264,528,1024 f64-chain-l
run f64 blocked blocktri-gpu 48,64 132,264,528,1024 f64-nd-l
run f32 chain blocktri-gpu 48,64 132,528,1024 f32-chain-l
run f32 blocked blocktri-gpu 48,64 132,528,1024 f32-nd-l
rm -f $OUT/b-*/*.svg $OUT/b-*/report.json
tar -C $OUT -czf $OUT/results.tgz . 2>/dev/null
