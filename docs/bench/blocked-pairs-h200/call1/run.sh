#!/usr/bin/env bash
# Paired tile products in the blocked factor (entry 73): ncu SASS samples of the base's lone
# nodes, per-level profiles and benches of base / a (products paired) / b (+ strip updates
# paired), GPU tests and sanitizers on b. OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee -a "$OUT/device.txt"
steps=${*:-ncu tests prof bench sanitize}
if [[ " $steps " == *" tests "* ]]; then
  for t in gpu_cholesky errors; do
    timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
    echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  done
fi
if [[ " $steps " == *" ncu "* ]]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 120 $NCU --kernel-name regex:factor_blocked_dataflow64_f64 --launch-skip 1 --launch-count 1 --set full --section SourceCounters \
    --warp-sampling-interval 0 --warp-sampling-buffer-size 536870912 -f -o $OUT/lone $B/blocktri-base profile --generate 64,64 --repeat 1 > $OUT/ncu.log 2>&1
  echo "ncu rc=$?"; tail -3 $OUT/ncu.log
  $NCU --import $OUT/lone.ncu-rep --page source --csv --print-source sass > $OUT/sass.csv 2>&1
  $NCU --import $OUT/lone.ncu-rep --page details > $OUT/details.txt 2>&1
  grep -E "Duration|Elapsed Cycles|Registers Per|Executed Instructions  " $OUT/details.txt | head -6
  xz -9 $OUT/sass.csv; rm -f $OUT/lone.ncu-rep; ls -la $OUT/sass.csv.xz
fi
bin() { case $1 in base) echo $B/blocktri-base;; a) echo $B/blocktri-a;; *) echo $B/blocktri-b;; esac; }
if [[ " $steps " == *" prof "* ]]; then
  for g in 64,64 4096,64 8192,32 512,32; do for v in base a b; do f=$OUT/profile-${g/,/x}-$v.txt
    timeout 60 $(bin $v) profile --generate $g --repeat 3 > $f 2>&1
    echo "$g $v: $(awk '$1 ~ /factor_blocked/ {printf "L%s %s | ", $2, $NF}' $f) $(grep 'sum of' $f)"; done; done
fi
if [[ " $steps " == *" bench "* ]]; then
  for r in 1 2; do for v in base a b; do for p in f64 f32; do
    timeout 200 $(bin $v) bench --full --suites horizon,fp64-sweep --batches 1 --nblocks 64,512,4096,16384 --block-sizes 32,64,128 --precision $p --methods blocktri-gpu --runs 5 --out-dir $OUT/b-$p-$v-$r > /dev/null 2>&1
    echo "$p $v r$r: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/b-$p-$v-$r/report.md | awk -F'|' '{printf "N=%s n=%s %s %s | ", $3, $4, $6, $7}')"
  done; done; done
fi
if [[ " $steps " == *" sanitize "* ]]; then
  for tool in racecheck memcheck synccheck; do for c in sanitize_cholesky_every_family; do
    timeout 250 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/$tool-$c.log" 2>&1
    echo "$tool $c rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool-$c.log" | tr '\n' ' ')"
  done; done
  for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 40000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
fi
date -u >> "$OUT/device.txt"
