#!/usr/bin/env bash
# A change against the base build on the GPU machine, in one call (`docs/perf-notes.md`
# entries 66-70): GPU tests, sanitizers on the tiled engine, per-kernel sums of both builds
# and the FP64 sweep alternating base and new in the same call.
#   [TESTS='a b'] [PROFILE='N,n ...'] [SUMS='regex ...'] [AB=n,n] [AB_F32=n,n] OUT=... \
#     bash scripts/gpu-ab.sh [tests] [sanitize] [profile] [ab]
# Layout (built here, carried as `.gpub`): .gpub/bin/blocktri (the change),
# .gpub/bin/blocktri-base (the base commit), .gpub/tests/<test> (test executables), packed
# in .gpub/bundle.tar.xz. Summary lines go to stdout (the device's output tail); logs,
# profiles and reports to $OUT.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests sanitize profile ab}
bin() { if [ "$1" = base ]; then echo $B/blocktri-base; else echo $B/blocktri; fi; }
if [[ " $steps " == *" tests "* ]]; then
  for t in ${TESTS:-gpu_modules errors gpu_cholesky gpu_mixed}; do
    timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1
    echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
  done
fi
if [[ " $steps " == *" sanitize "* ]]; then
  for tool in memcheck racecheck synccheck; do
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_tiled > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
  done
  # The wide products run from n = 512 only: once more with them (and the fused steps) forced.
  BLOCKTRI_WIDE_MIN_BLOCK=64 BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_UPDATE=64 BLOCKTRI_UPDATE_TRSM_NODES=1 timeout 200 \
    compute-sanitizer --tool memcheck --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_tiled > "$OUT/memcheck-wide.log" 2>&1
  echo "memcheck (wide forced) rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck-wide.log" | tr '\n' ' ')"
  for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 60000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
fi
if [[ " $steps " == *" profile "* ]]; then
  # Per-kernel sums (µs) of one factor + solve, for each kernel-name regex in SUMS.
  for g in ${PROFILE:-2048,128 1024,256 512,512 256,1024}; do
    for v in base new; do
      f=$OUT/profile-${g/,/x}-$v.txt; timeout 90 $(bin $v) profile --generate $g --repeat 1 > $f 2>&1
      line="$g $v"
      for re in ${SUMS:-neighbours update ^tiled_trsm potrf}; do line+=" $re $(awk -v re="$re" '$1 ~ re {s+=$NF} END {print s+0}' $f)"; done
      echo "$line $(grep 'sum of' $f)"
    done
  done
fi
if [[ " $steps " == *" ab "* ]]; then
  run() { # variant round sizes precision
    timeout 200 $(bin $1) bench --full --suites fp64-sweep --block-sizes $3 --precision $4 \
      --methods blocktri-gpu --runs 3 --out-dir $OUT/$4-$1-$2 > $OUT/$4-$1-$2.log 2>&1
    echo "$4 $1 $2: $(grep -E 'blocktri-gpu \| (factor|factor\+solve) \|' $OUT/$4-$1-$2/report.md | awk -F'|' '{printf "n=%s %s %s | ", $4, $6, $7}')"
  }
  for round in 1 2; do for v in base new; do run $v $round ${AB:-128,256,512,1024} f64; done; done
  if [ -n "${AB_F32:-}" ]; then for v in base new; do run $v 1 $AB_F32 f32; done; fi
fi
date -u >> "$OUT/device.txt"
