#!/usr/bin/env bash
# Call 1: the tiled products' interior copies (new) against the base build (blocktri-base =
# 277e14e) in the same call: per-kernel sums, the f64 sweep n = 128..1024, f32 at 128/256;
# GPU tests and sanitizers on the new build.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
sums() { awk 'NR>1 && NF>=7 {s[$1]+=$NF} END {for (k in s) printf "%s=%.0f ", k, s[k]}' "$1"; }
for g in "256,1024 f64" "512,512 f64" "1024,256 f64" "2048,128 f64" "1024,256 f32"; do set -- $g
  for v in base new; do
    bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
    f=$OUT/profile-${1/,/x}-$2-$v.txt; timeout 90 $bin profile --generate $1 --precision $2 --repeat 2 > $f 2>&1
    echo "$1 $2 $v: $(sums $f) $(grep 'sum of kernel' $f)"
  done
done
for r in 1 2; do for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 200 $bin bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $OUT/b$r-$v > /dev/null 2>&1
  echo "f64 r$r $v: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b$r-$v/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
done; done
for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 60 $bin bench --full --suites fp64-sweep --block-sizes 128,256 --precision f32 --methods blocktri-gpu --runs 3 --out-dir $OUT/f32-$v > /dev/null 2>&1
  echo "f32 $v: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/f32-$v/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
done
for t in gpu_cholesky errors gpu_mixed; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_tiled" "memcheck sanitize_cholesky_tiled_tf32" "racecheck sanitize_cholesky_tiled" "synccheck sanitize_cholesky_tiled"; do set -- $tc
  timeout 120 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
# The wide products everywhere (neighbours and column pairs) under memcheck and racecheck.
for tool in memcheck racecheck; do
  BLOCKTRI_WIDE_MIN_BLOCK=0 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_UPDATE=64 timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 --exact sanitize_cholesky_tiled > "$OUT/$tool-wide.log" 2>&1
  echo "$tool wide-forced rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-wide.log" | tr '\n' ' ')"
done
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d b1-* b2-* f32-* profile-*) && rm -rf $OUT/b1-* $OUT/b2-* $OUT/f32-* $OUT/profile-*
date -u >> "$OUT/device.txt"
