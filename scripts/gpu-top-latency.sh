#!/usr/bin/env bash
# Latency of the tiled engine's launches (perf-notes entry 16), on the GPU machine after
# scripts/gpu-pack.sh. Steps (default: dur tests sanitize bench):
#   dur: true kernel durations of one factor + solve (ncu gpu__time_duration: no event
#        floor) at N = 2048, n = 128 and N = 256, n = 1024;
#   ncu: source-level stalls of top-level potrf / forward_diag / forward_couple /
#        backward_diag and the level-0 backward_couple at n = 128;
#   tests: tests/gpu_cholesky.rs; sanitize: memcheck, racecheck, synccheck on the tiled
#        sanitizer case; bench: the FP64 sweep n = 128 .. 1024 with the peers.
# Everything lands in $OUT/top.tgz.
set -u
source "$(dirname "$0")/gpu-env.sh"
b=.gpu/bin/blocktri; t=.gpu/tests; W="$OUT/top"; mkdir -p "$W"
for step in ${*:-dur tests sanitize bench}; do
  case $step in
    dur)
      for g in ${DUR:-2048,128 256,1024}; do
        timeout 240 ncu --metrics gpu__time_duration.sum --csv $b profile --generate $g --repeat 1 > "$W/dur-${g/,/x}.csv" 2> "$W/dur-${g/,/x}.err"
        echo "dur $g rc=$?"
      done ;;
    ncu)
      one() { # kernel, launches to skip, tag
        timeout 120 ncu --kernel-name $1 --launch-skip $2 --launch-count 1 --set full --import-source no -o "$W/$3" \
          $b profile --generate 2048,128 --repeat 1 > /dev/null 2>&1
        ncu --import "$W/$3.ncu-rep" --print-details all > "$W/$3.txt" 2>&1
        ncu --import "$W/$3.ncu-rep" --page source --csv --print-source sass > "$W/$3-sass.csv" 2>&1
        rm -f "$W/$3.ncu-rep"; echo "== $3"; grep -E "^    Duration|Warp Cycles Per Issued|Issued Instructions  " "$W/$3.txt" | head -3
      }
      one tiled_potrf_f64 20 potrf-top; one tiled_forward_diag_f64 20 fdiag-top; one tiled_forward_couple_f64 18 fcouple-top
      one tiled_backward_couple_f64 10 bcouple-l0; one tiled_backward_diag_f64 2 bdiag-top ;;
    tests)
      timeout 300 $t/gpu_cholesky-* ${FILTER:-} --test-threads 1 > "$W/test-gpu_cholesky.log" 2>&1; echo "gpu_cholesky rc=$?"
      grep -E "test result|FAILED|panicked" "$W/test-gpu_cholesky.log" | head -5 ;;
    sanitize)
      run_sanitizers sanitize_cholesky_tiled "$W" ;;
    bench)
      for P in ${PRECS:-f64}; do
        timeout 400 $b bench --full --suites fp64-sweep --block-sizes ${SIZES:-128,256,512,1024} --precision $P \
          --methods blocktri-gpu,vendor-schur,cudss --runs ${RUNS:-3} --out-dir "$W/sweep-$P" > "$W/sweep-$P.log" 2>&1
        echo "== sweep $P rc=$?"; grep -E "^\| " "$W/sweep-$P/report.md" | head -20
      done ;;
  esac
done
tar czf "$OUT/top.tgz" -C "$W" . && rm -rf "$W"
