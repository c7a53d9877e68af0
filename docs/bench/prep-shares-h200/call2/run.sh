#!/usr/bin/env bash
# Call 2: prep3 (asynchronous copies of each tile and its mirror into shared memory, fixed
# tile shares) against base, b8 and prep2 (call 1), by BLOCKTRI_PREP (f64).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for g in 2048,128 1024,256 512,512; do
  for v in base b8 2 3; do
    e=$v; [ $v = base ] && e=
    f=$OUT/profile-${g/,/x}-$v.txt; BLOCKTRI_PREP=$e timeout 60 $B profile --generate $g --repeat 2 > $f 2>&1
    echo "$g $v $(awk '$1 ~ /tiled_prep/ {print $1, "regs", $6, "us", $NF}' $f)"
  done
done
for v in 3; do
  BLOCKTRI_PREP=$v timeout 90 ncu -k regex:tiled_prep --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats $B profile --generate 2048,128 --repeat 1 > $OUT/ncu-$v.txt 2>&1
  echo "ncu $v: $(grep -E 'DRAM Throughput|Duration|Achieved Occupancy|Registers Per|Memory Throughput' $OUT/ncu-$v.txt | tr -s ' ' | tr '\n' ';')"
done
for t in gpu_cholesky errors; do
  BLOCKTRI_PREP=3 timeout 240 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tool in memcheck racecheck synccheck; do
  BLOCKTRI_PREP=3 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_tiled > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
for round in 1 2; do for v in base 3; do
  e=$v; [ $v = base ] && e=
  BLOCKTRI_PREP=$e timeout 200 $B bench --full --suites fp64-sweep --block-sizes 128,256,512,1024 --precision f64 --methods blocktri-gpu --runs 3 --out-dir $OUT/b-$v-$round > /dev/null 2>&1
  echo "$v $round: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$v-$round/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
done; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d b-* profile-* ncu-*) && rm -rf $OUT/b-* $OUT/profile-* $OUT/ncu-*
date -u >> "$OUT/device.txt"
