#!/usr/bin/env bash
# Entry 98, call 3: after call 2 (solve -15 to -18 %, but the factor +0.4 / +1.1 ms: the
# inverse steps ran after each level's column steps, the top level's ~160 us chain at the
# end of the factor), the inverse step of column tile k forked right after the potrf of
# step k (beside the rest of the column steps), and each tile row's product split into
# parts of 2 tiles (partial sums added by the copy). Tests: gpu_cholesky's tiled tests,
# gpu_transfers, gpu_mixed; memcheck, synccheck, racecheck on sanitize_cholesky_tiled. Then
# blocktri against 5766ed8 (blocktri-base), alternating, two rounds, as call 2; profiles.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
timeout 200 $T/gpu_cholesky --test-threads=1 tiled > "$OUT/r/test-gpu_cholesky-tiled.log" 2>&1
echo "gpu_cholesky tiled rc=$? $(grep -E 'test result' "$OUT/r/test-gpu_cholesky-tiled.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-gpu_cholesky-tiled.log" | head -12
for t in gpu_transfers:100 gpu_mixed:60; do
  name=${t%:*}; lim=${t#*:}
  timeout $lim $T/$name --test-threads=1 > "$OUT/r/test-$name.log" 2>&1
  echo "$name rc=$? $(grep -E 'test result' "$OUT/r/test-$name.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$name.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck:60 synccheck:60 racecheck:150; do
  name=${tool%:*}; lim=${tool#*:}
  timeout $lim $CS --tool $name --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-inverse-$name.log" 2>&1
  echo "sanitize_cholesky_tiled $name rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-inverse-$name.log" | tr '\n' ' ')"
done
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
