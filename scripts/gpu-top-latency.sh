#!/usr/bin/env bash
# Latency of the tiled engine's launches (perf-notes entry 16), on the GPU machine after
# scripts/gpu-pack.sh. Steps (default: dur tests sanitize bench):
#   dur: true kernel durations of one factor + solve (ncu gpu__time_duration: no event
#        floor) at N = 2048, n = 128 and N = 256, n = 1024;
#   ncu: source-level stalls (SASS) of the launches in NCU at n = 128 (default: the
#        top-level potrf, forward_node, forward_couple, backward_node and the level-0
#        backward_couple);
#   sums: per-kernel sums of `blocktri profile` (event-timed, graphs off) at the DUR
#        sizes, once per setting in VARIANTS (default: "default" = the built-in choices,
#        and BLOCKTRI_WIDE_WAVES=1000000 = never the wide neighbour products; e.g.
#        BLOCKTRI_TILED_SOLVE=steps for the per-step diagonal solves);
#   tests: tests/gpu_cholesky.rs; sanitize: memcheck, racecheck, synccheck on the tiled
#        sanitizer case, once as dispatched, once with every neighbour launch on the
#        wide products (BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_MIN_BLOCK=64) and once more
#        with the alternative shapes (BLOCKTRI_WIDE_PRODUCT=16 BLOCKTRI_UPDATE_PRODUCT=tall); bench: the FP64 sweep n = 128 .. 1024 with
#        the peers.
# Everything lands in $OUT/top-<steps>.tgz (one archive per invocation).
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
      # NCU: "kernel:launches to skip:tag" (n = 128, N = 2048: 12 levels, the top one last
      # upward and first downward).
      for k in ${NCU:-tiled_potrf_f64:20:potrf-top tiled_forward_node_f64:11:fnode-top tiled_forward_couple_f64:18:fcouple-top \
                     tiled_backward_couple_f64:10:bcouple-l0 tiled_backward_node_f64:0:bnode-top}; do
        IFS=: read -r kernel skip tag <<< "$k"; one "$kernel" "$skip" "$tag"
      done ;;
    sums)
      for g in ${DUR:-2048,128 256,1024}; do
        for v in ${VARIANTS:-default BLOCKTRI_WIDE_WAVES=1000000}; do
          f="$W/sums-${g/,/x}-${v//[=_]/-}.txt"
          if [ "$v" = default ]; then timeout 120 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1
          else env "$v" timeout 120 $b profile --generate $g --repeat 1 > "$f.raw" 2>&1; fi
          awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6 }
               END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "total %.1f us\n", t }' \
            "$f.raw" | sort -k4 -n -r > "$f"
          echo "== $g $v"; cat "$f"
        done
      done ;;
    tests)
      timeout 300 $t/gpu_cholesky-* ${FILTER:-} --test-threads 1 > "$W/test-gpu_cholesky.log" 2>&1; echo "gpu_cholesky rc=$?"
      grep -E "test result|FAILED|panicked" "$W/test-gpu_cholesky.log" | head -5 ;;
    sanitize)
      run_sanitizers sanitize_cholesky_tiled "$W"
      mkdir -p "$W/wide" "$W/alt"
      BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_MIN_BLOCK=64 run_sanitizers sanitize_cholesky_tiled "$W/wide"
      BLOCKTRI_WIDE_WAVES=0 BLOCKTRI_WIDE_MIN_BLOCK=64 BLOCKTRI_WIDE_PRODUCT=16 BLOCKTRI_UPDATE_PRODUCT=tall \
        run_sanitizers sanitize_cholesky_tiled "$W/alt" ;;
    bench)
      for P in ${PRECS:-f64}; do
        timeout 400 $b bench --full --suites fp64-sweep --block-sizes ${SIZES:-128,256,512,1024} --precision $P \
          --methods blocktri-gpu,vendor-schur,cudss --runs ${RUNS:-3} --out-dir "$W/sweep-$P" > "$W/sweep-$P.log" 2>&1
        echo "== sweep $P rc=$?"; grep -E "^\| " "$W/sweep-$P/report.md" | head -20
      done ;;
  esac
done
name=${*:-all}; tar czf "$OUT/top-${name// /-}.tgz" -C "$W" . && rm -rf "$W"
