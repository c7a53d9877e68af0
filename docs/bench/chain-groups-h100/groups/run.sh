#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
rm -rf .gpub/bin .gpub/tests; tar -C .gpub -xJf .gpub/bundle.tar.xz
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
b=.gpub/bin/blocktri; base=.gpub/bin/blocktri-base
M=$OUT/main.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $M
timeout 240 .gpub/tests/gpu_cholesky 2>&1 | grep -E "test |test result|FAILED|panicked" | tee -a $M
for tool in memcheck racecheck synccheck; do
  echo "== $tool" | tee -a $M
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_chain 2>&1 | tail -2 | tee -a $M
done
run() { timeout 150 $1 bench --full --suites batch --batches $5 --nblocks 64 --block-sizes $4 --precision $2 --methods blocktri-gpu --kernels $3 --runs 5 \
    --out-dir /tmp/o-$6 >> $OUT/b-$6.log 2>&1; echo "$6 rc=$?"; }
run $base f64 chain 8,16 1024,4096 base
run $b f64 chain 8,16 1024,4096 new
run $base f32 chain 8,16 4096 base
run $b f32 chain 8,16 4096 new
run $b f64 chain 4,8,16 264,396,528 x
run $b f64 auto 4,8,16 264,396,528 x
timeout 240 $b bench --full --suites batch --batches 64,528,1024,4096 --nblocks 64 --block-sizes 8,16 --precision f64 \
  --methods blocktri-gpu,vendor-seq,vendor-schur,cudss --runs 5 --out-dir /tmp/o-peers > $OUT/b-peers.log 2>&1; echo "peers rc=$?"
