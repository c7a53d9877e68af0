#!/usr/bin/env bash
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
cd .gpub && tar -xJf inv.tar.xz && cd ..
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee $OUT/device.txt
for t in gpu_transfers tridiag; do echo "== $t"; timeout 200 .gpub/tests/$t --include-ignored --test-threads=2 > $OUT/test-$t.log 2>&1; grep -E "test result|FAILED|panicked" $OUT/test-$t.log | head -5; done
echo "== memcheck streamed"; timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 .gpub/tests/gpu_transfers --test-threads=1 streamed > $OUT/memcheck-streamed.log 2>&1; grep -E "test result|ERROR SUMMARY" $OUT/memcheck-streamed.log
B="bench --suites tridiag --tridiag-sizes 4096,16384 --precision f64 --runs 5"
for i in 1 2 3; do for bin in blocktri blocktri-base; do
  .gpub/bin/$bin $B > $OUT/bench-$bin-$i.log 2>&1; echo "$bin $i: $(grep -E 'gpu-fused-(vec|pinned)' $OUT/bench-$bin-$i.log | awk '{printf "%s n=%s %s/%s  ", $6, $5, $8, $9}')"
done; done
for bin in blocktri blocktri-base; do
  for i in 1 2 3; do .gpub/bin/$bin invert --generate 16384 2>&1 | grep -o "in [0-9.]* ms" | tr '\n' ' '; done; echo " <- $bin invert --generate 16384"
done 2>&1 | tee $OUT/cli.txt
BLOCKTRI_TRACE=1 .gpub/bin/blocktri invert --generate 16384 > $OUT/trace.txt 2>&1
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
