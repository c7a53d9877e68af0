#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
rm -rf .gpub/bin .gpub/tests; tar -C .gpub -xJf .gpub/bundle.tar.xz
b=.gpub/bin/blocktri
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
for t in gpu_cholesky arrow selinv; do timeout 200 .gpub/tests/$t 2>&1 | grep -E "test result|FAILED|panicked" | tee -a $OUT/tests.log; done
for tool in memcheck racecheck synccheck; do
  echo "== $tool" | tee -a $OUT/san.log
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_chain 2>&1 | tail -2 | tee -a $OUT/san.log
done
timeout 150 $b bench --full --suites batch --batches 132,1024 --nblocks 64 --block-sizes 48,64,96 --precision f64 --methods blocktri-gpu --kernels chain --runs 5 \
    --out-dir $OUT/b-f64-chain-final > $OUT/b-f64-chain-final.log 2>&1; echo "bench rc=$?"
grep -E "^\|" $OUT/b-f64-chain-final/report.md | grep -v transfer
rm -f $OUT/b-*/*.svg $OUT/b-*/report.json
