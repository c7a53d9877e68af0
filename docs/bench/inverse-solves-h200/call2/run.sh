#!/usr/bin/env bash
# Entry 98, call 2: racecheck on sanitize_cholesky_tiled (call 1's 60 s were too short),
# gpu_transfers (chunked batches and segments: the bits of the whole), then the change
# (blocktri) against 5766ed8 (blocktri-base; main's kernels and host code), alternating, two
# rounds: horizon n = 512 (N = 512), medians of 10; fp64 sweep n = 1024 (N = 256, --full,
# medians of 5). Profile of the change at n = 512 (factor + solve) and n = 1024 (solve).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
timeout 200 $CS --tool racecheck --error-exitcode 9 \
  $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-inverse-racecheck.log" 2>&1
echo "sanitize_cholesky_tiled racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|test result' "$OUT/r/tiled-inverse-racecheck.log" | tr '\n' ' ')"
timeout 120 $T/gpu_transfers --test-threads=1 > "$OUT/r/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-gpu_transfers.log" | head -12
run() { # label round
  local label=$1 round=$2
  local bin=blocktri; [ $label = base ] && bin=blocktri-base
  timeout 100 $B/$bin bench --suites horizon --batches 1 --nblocks 512 --block-sizes 512 --precision f64 \
    --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$label-512-$round" > "$OUT/r/bench-$label-512-$round.log" 2>&1
  grep -E '^horizon' "$OUT/r/bench-$label-512-$round.log" | grep -v transfer | grep -v skipped | awk -v v=$label -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
  timeout 100 $B/$bin bench --full --suites fp64-sweep --block-sizes 1024 --precision f64 \
    --methods blocktri-gpu --runs 5 --out-dir "$OUT/r/bench-$label-1024-$round" > "$OUT/r/bench-$label-1024-$round.log" 2>&1
  grep -E '^fp64' "$OUT/r/bench-$label-1024-$round.log" | grep -v transfer | awk -v v=$label -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
}
run base 1; run new 1; run base 2; run new 2
awk '{print $1,$2,$6,$7,$9,$10,$11,$13}' "$OUT/summary.txt"
timeout 40 $B/blocktri profile --generate 512,512 --factor-solve --repeat 1 > "$OUT/r/profile-blocktri-512x512.txt" 2>&1
echo "### profile 512 $(tail -1 $OUT/r/profile-blocktri-512x512.txt)"
timeout 60 $B/blocktri profile --generate 256,1024 --repeat 1 > "$OUT/r/profile-blocktri-256x1024.txt" 2>&1
echo "### profile 1024 $(tail -1 $OUT/r/profile-blocktri-256x1024.txt)"
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
