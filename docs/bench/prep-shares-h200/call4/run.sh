#!/usr/bin/env bash
# Call 4: the committed prep (asynchronous staging, run-time loops; f64 and f32) against
# the base build (blocktri-base = 442bf85) in the same call; GPU tests and sanitizers.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for g in "2048,128 f64" "1024,256 f64" "512,512 f64" "2048,128 f32" "1024,256 f32"; do set -- $g
  for v in base new; do
    bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
    f=$OUT/profile-${1/,/x}-$2-$v.txt; timeout 60 $bin profile --generate $1 --precision $2 --repeat 2 > $f 2>&1
    echo "$1 $2 $v $(awk '$1 ~ /tiled_prep/ {print $1, "regs", $6, "smem", $5, "us", $NF}' $f)"
  done
done
for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 200 $bin bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $OUT/b-$v > /dev/null 2>&1
  echo "$v: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$v/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
done
for t in gpu_cholesky errors gpu_mixed; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_tiled" "memcheck sanitize_cholesky_tiled_tf32" "racecheck sanitize_cholesky_tiled" "synccheck sanitize_cholesky_tiled"; do set -- $tc
  timeout 120 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d b-* profile-*) && rm -rf $OUT/b-* $OUT/profile-*
date -u >> "$OUT/device.txt"
