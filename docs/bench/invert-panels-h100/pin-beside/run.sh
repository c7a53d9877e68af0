#!/usr/bin/env bash
# Streamed inverse (#12): host panels in one struct, pinned beside the preparation: tests, memcheck, one-shot CLI new/base alternating, traces, bench.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in tridiag gpu_transfers; do timeout 200 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1; echo "$t rc=$?: $(grep -E 'test result' "$OUT/test-$t.log")"; done
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 .gpub/tests/gpu_transfers --test-threads=1 streamed > "$OUT/memcheck-streamed.log" 2>&1; echo "memcheck streamed rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck-streamed.log")"
for round in 1 2 3; do for bin in blocktri blocktri-base; do
  echo "== round $round $bin: $(for i in 1 2 3; do $B/$bin invert --generate 16384 2>&1 | grep -o 'in [0-9.]* ms' | tr '\n' ' '; done)"
done; done 2>&1 | tee "$OUT/cli.txt"
for bin in blocktri blocktri-base; do BLOCKTRI_TRACE=1 $B/$bin invert --generate 16384 > "$OUT/trace-$bin.txt" 2>&1; echo "-- $bin"; grep -E "trace|wall|A X" "$OUT/trace-$bin.txt"; done
for bin in blocktri blocktri-base; do $B/$bin bench --suites tridiag --tridiag-sizes 4096,16384 --precision f64 --runs 5 > "$OUT/bench-$bin.log" 2>&1
  echo "bench $bin: $(grep -E 'gpu-fused-vec' "$OUT/bench-$bin.log" | awk '{printf "n=%s %s/%s  ", $5, $8, $9}')"; done
tar czf /tmp/r.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/r.tgz "$OUT/results.tgz"
