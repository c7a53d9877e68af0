#!/usr/bin/env bash
# Entry 94: the fused node bodies' input loads 8 per thread in flight (was 4), and the
# single-launch factor prefetching each node's read-only input diagonal block into L2
# before it waits. base = 9688d4b (blocktri-base), new = the change (blocktri), alternating.
# Then ptxas spill check of the new PTX, the GPU tests and the sanitizers on the fused families.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
$PTXAS -arch=sm_90 -v .gpub/new.ptx -o /dev/null > "$OUT/r/ptxas.txt" 2>&1; echo "ptxas rc=$?"
grep -B2 "bytes spill" "$OUT/r/ptxas.txt" | grep -E "Compiling|spill" | paste - - | grep -E "rows|blocked|panel" | grep -v " 0 bytes spill stores, 0 bytes spill loads" | head -20
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    for prec in f64 f32; do
      timeout 200 $B/$bin bench --suites horizon --batches 1 --nblocks 512,4096,8192,16384 --block-sizes 16,32,64 --precision $prec \
        --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$bin-$prec-$round" > "$OUT/r/bench-$bin-$prec-$round.log" 2>&1
      echo "### $bin $prec round $round rc=$?"
      grep -E '^horizon' "$OUT/r/bench-$bin-$prec-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
    done
  done
done
for g in 8192,32 4096,64 4096,16 16384,16; do
  timeout 90 $B/blocktri profile --generate $g --factor-solve --repeat 3 > "$OUT/r/profile-new-${g/,/x}.txt" 2>&1
  echo "### profile $g rc=$? $(tail -1 $OUT/r/profile-new-${g/,/x}.txt)"
done
for t in gpu_cholesky errors; do
  timeout 250 $T/$t --test-threads=1 > "$OUT/r/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/r/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tc in sanitize_cholesky_every_family sanitize_cholesky_large sanitize_cholesky_blocked_interlaced sanitize_cholesky_small; do
for tool in memcheck synccheck racecheck; do
  timeout 150 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact $tc > "$OUT/r/$tc-$tool.log" 2>&1
  echo "$tc $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/$tc-$tool.log" | tr '\n' ' ')"
done
done
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
