#!/usr/bin/env bash
# The GPU tests that call factor + solve through other paths (chunked and page-locked
# transfers, mixed precision, the arrowhead, Kalman, MPC, selected inversion) on the build
# with the forward sweep beside the factorization. Usage: bash .gpub/more.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee $OUT/device.txt
for t in gpu_transfers gpu_mixed arrow kalman mpc selinv; do
  timeout 150 .gpub/tests/$t --test-threads=1 > $OUT/test-$t.log 2>&1
  echo "$t rc=$? $(grep -E 'test result' $OUT/test-$t.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-$t.log | head -3
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
