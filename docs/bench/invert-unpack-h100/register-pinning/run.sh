#!/usr/bin/env bash
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
cd .gpub && tar -xJf bundle.tar.xz && cd ..
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee $OUT/device.txt
for t in gpu_transfers tridiag external_layouts rayon_pool threads mpc selinv arrow errors recovery gpu_mixed gpu_cholesky; do
  timeout 240 .gpub/tests/$t --include-ignored --test-threads=2 > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep -E 'test result' $OUT/test-$t.log | tail -1)"; grep -E "FAILED|panicked" $OUT/test-$t.log | head -3
done
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 .gpub/tests/gpu_transfers --test-threads=1 staged chunked pinned page streamed > $OUT/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log)"
for i in 1 2 3; do BLOCKTRI_TRACE=1 .gpub/bin/blocktri invert --generate 16384 2>&1 | grep -E "host panels|stream through|inverted"; done | tee $OUT/invert-new.txt
for i in 1 2 3; do .gpub/bin/blocktri-base invert --generate 16384 2>&1 | grep -E "inverted"; done | tee $OUT/invert-base.txt
for b in blocktri blocktri-base; do BLOCKTRI_TRACE=1 .gpub/bin/$b solve --generate 16384,16 > $OUT/solve-trace-$b.txt 2>&1; echo "$b solve: $(grep -E 'first call|refactor' $OUT/solve-trace-$b.txt | head -3 | tr '\n' ' ')"; done
.gpub/bin/blocktri info --transfers > $OUT/link.txt 2>&1; grep -E "staged .2H \(solver|link .2H, pinned  " $OUT/link.txt
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
