#!/usr/bin/env bash
# Host panel size and count of the streamed inverse into a new Vec (issue #12): one-shot CLI wall, trace, bench; tests with two candidate layouts.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for round in 1 2; do
for cfg in ${CFGS:-"32 3" "16 3" "8 4" "4 6" "4 8"}; do
  set -- $cfg; export BLOCKTRI_INVERT_PANEL_MIB=$1 BLOCKTRI_INVERT_HOST_PANELS=$2
  echo "== round $round panels $1 MiB x $2: $(for i in 1 2 3; do $B invert --generate 16384 2>&1 | grep -o 'in [0-9.]* ms' | tr '\n' ' '; done)"
  BLOCKTRI_TRACE=1 $B invert --generate 16384 > "$OUT/trace-$1x$2-$round.txt" 2>&1; grep -E "host panels|stream|wall" "$OUT/trace-$1x$2-$round.txt" | sed 's/^/   /'
  $B bench --suites tridiag --tridiag-sizes 4096,16384 --precision f64 --runs 5 > "$OUT/bench-$1x$2-$round.log" 2>&1
  grep -E "gpu-fused-vec" "$OUT/bench-$1x$2-$round.log" | awk '{printf "   bench n=%s median %s min %s\n", $5, $8, $9}'
done; done 2>&1 | tee "$OUT/summary.txt"
unset BLOCKTRI_INVERT_PANEL_MIB BLOCKTRI_INVERT_HOST_PANELS
if [ -n "${TEST_CFGS:-"4 6|8 4"}" ]; then IFS='|' read -ra TC <<< "${TEST_CFGS:-4 6|8 4}"; for cfg in "${TC[@]}"; do
  set -- $cfg; export BLOCKTRI_INVERT_PANEL_MIB=$1 BLOCKTRI_INVERT_HOST_PANELS=$2
  for t in tridiag gpu_transfers; do timeout 200 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t-$1x$2.log" 2>&1; echo "$t $1x$2 rc=$?: $(grep -E 'test result' "$OUT/test-$t-$1x$2.log")"; done
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 .gpub/tests/gpu_transfers --test-threads=1 streamed > "$OUT/memcheck-streamed-$1x$2.log" 2>&1; echo "memcheck streamed $1x$2 rc=$?: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck-streamed-$1x$2.log")"
done; fi
tar czf /tmp/r.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/r.tgz "$OUT/results.tgz"
