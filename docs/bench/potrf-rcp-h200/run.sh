#!/usr/bin/env bash
# The 8 x 8 diagonal factor with its pivot chain through 1 / d instead of 1 / sqrt(d) (issue #10,
# docs/perf-notes.md entry 68): GPU tests, sanitizers on the tiled engine, per-kernel
# profiles of both builds (blocktri-base = a3c2610), and the FP64 sweep's factor and
# factor + solve alternating with the base build in the same call.
# Usage: [TESTS='a b'] OUT=... bash .gpub/run.sh [tests] [sanitize] [profile] [ab]
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests sanitize profile ab}
if [[ " $steps " == *" tests "* ]]; then
  for t in ${TESTS:-gpu_cholesky errors selinv gpu_mixed}; do
    timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
    echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  done
fi
if [[ " $steps " == *" sanitize "* ]]; then
  for tool in memcheck racecheck synccheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_tiled > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
  done
  for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 60000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
fi
if [[ " $steps " == *" profile "* ]]; then
  for g in 2048,128 1024,256 512,512; do
    for v in base new; do
      bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
      f=$OUT/profile-${g/,/x}-$v.txt; timeout 60 $bin profile --generate $g --repeat 1 > $f 2>&1
      echo "$g $v potrf sum $(awk '$1 ~ /tiled_potrf/ {s+=$NF} END {print s}' $f) level0 $(awk '$1 ~ /tiled_potrf/ && $2==0 {s+=$NF} END {print s}' $f) top $(awk '$1 ~ /tiled_potrf/ && $3<=8 {s+=$NF} END {print s}' $f) regs $(awk '$1 ~ /tiled_potrf_f64/ {print $6; exit}' $f) $(grep 'sum of' $f)"
    done
  done
fi
if [[ " $steps " == *" ab "* ]]; then
  run() { # variant round sizes precision
    local bin=$B/blocktri; [ $1 = base ] && bin=$B/blocktri-base
    timeout 200 $bin bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
      --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
    echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
  }
  for round in 1 2; do for v in base new; do run $v $round ${AB:-128,256,512,1024} f64; done; done
  for v in base new; do run $v 1 128,256 f32; done
fi
date -u >> "$OUT/device.txt"
