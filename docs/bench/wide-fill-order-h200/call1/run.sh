#!/usr/bin/env bash
# Entry 95: the wide f64 product's next-chunk copies in four parts after the last k-step's
# row tiles. base = 9688d4b (blocktri-base), new = the change (blocktri), alternating, two
# rounds; profiles (`run.sh bench`); GPU tests and sanitizers on the tiled engine with the
# wide kernels forced (`run.sh tests`).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
PART=${1:-bench}
if [ "$PART" = bench ]; then
for round in 1 2; do
  for bin in blocktri-base blocktri; do
    for g in 512:512 256:1024 128:2048; do
      N=${g%:*}; n=${g#*:}
      timeout 200 $B/$bin bench --suites horizon --batches 1 --nblocks $N --block-sizes $n --precision f64 \
        --methods blocktri-gpu --runs 10 --out-dir "$OUT/r/bench-$bin-$n-$round" > "$OUT/r/bench-$bin-$n-$round.log" 2>&1
      echo "### $bin $n round $round rc=$?"
      grep -E '^horizon' "$OUT/r/bench-$bin-$n-$round.log" | grep -v transfer | awk -v v=$bin -v r=$round '{print v, r, $0}' >> "$OUT/summary.txt"
    done
  done
done
for bin in blocktri-base blocktri; do
  timeout 90 $B/$bin profile --generate 256,1024 --factor-solve --repeat 1 > "$OUT/r/profile-$bin-256x1024.txt" 2>&1
  timeout 90 $B/$bin profile --generate 512,512 --factor-solve --repeat 1 > "$OUT/r/profile-$bin-512x512.txt" 2>&1
  echo "### profile $bin $(tail -1 $OUT/r/profile-$bin-256x1024.txt)"
done
else
for t in gpu_cholesky errors; do
  timeout 250 $T/$t --test-threads=1 > "$OUT/r/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/r/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/r/test-$t.log" | head -12
done
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_MIN_BLOCK=64 timeout 200 $CS --tool $tool --error-exitcode 9 \
    $T/gpu_sanitize --include-ignored --exact sanitize_cholesky_tiled > "$OUT/r/tiled-wide-$tool.log" 2>&1
  echo "sanitize_cholesky_tiled (wide forced) $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/tiled-wide-$tool.log" | tr '\n' ' ')"
done
fi
rm -rf "$OUT"/r/bench-*/*.svg "$OUT"/r/bench-*/report.json
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
