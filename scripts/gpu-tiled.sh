#!/usr/bin/env bash
# The tiled engine on the GPU machine, in one call:
#   bash scripts/gpu-tiled.sh [tests] [cholesky] [soak] [ncu] [sanitize] [profile] [bench] [families] [chain] [tf32] [mixed]
# tests: every GPU test executable; cholesky: only tests/gpu_cholesky.rs; soak: the ignored
# 100 000-cycle refactor + solve run (tests/gpu_soak.rs, CYCLES to change); ncu: stalls of one
# neighbour-product launch; profile: kernel
# sums of one factor + solve (PROFILE="N,n ..."); sanitize: compute-sanitizer memcheck/racecheck/synccheck
# on the tiled sanitizer cases; bench: the FP64 sweep (N n = 262144, n = 32..2048) with the
# GPU peers in the same run (PREC=f64,f32 for both); families: fused vs tiled at n <= 128;
# chain: batches (S = 64 .. 4096, N = 64) on the chain engine, nested dissection and the peers;
# tf32: the f32 FP64-sweep sizes with each f32 tile product (fma, tf32, tf32x3) and the f32
# peer; mixed: f64 sizes with the mixed-precision solver (f32 factor + refinement) next to
# the f64 one and the peers. SAN_FILTER may name several test filters (space-separated).
set -u
source "$(dirname "$0")/gpu-env.sh"
steps=${*:-tests sanitize bench}
b=.gpu/bin/blocktri
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
for step in $steps; do
  case $step in
    tests)
      $b info 2>&1 | tee "$OUT/tests.log"
      timeout ${TT:-300} bash .gpu/run-tests.sh 2>&1 | tee -a "$OUT/tests.log" | grep -E "^==|test result|FAILED|panicked|gpu machine" ;;
    cholesky)
      timeout ${TT:-300} $(ls .gpu/tests/gpu_cholesky-* | head -1) 2>&1 | tee "$OUT/cholesky.log" | grep -E "test result|FAILED|panicked" ;;
    soak)
      BLOCKTRI_SOAK_CYCLES=${CYCLES:-100000} timeout ${TT:-300} $(ls .gpu/tests/gpu_soak-* | head -1) --ignored --nocapture 2>&1 \
        | tee "$OUT/soak.log" | grep -E "soak:|test result|FAILED|panicked" ;;
    profile)
      for g in ${PROFILE:-256,1024 1024,256 2048,128}; do
        f="$OUT/profile-${g/,/x}.log"
        echo "### $g"; timeout 120 $b profile --generate $g --repeat 3 > "$f" 2>&1
        awk '$1 ~ /^tiled_|^fused_|^level_/ {t[$1] += $NF; c[$1]++} /^sum of/ {print}
             END {for (k in t) printf "%-28s %4d launches %11.1f us\n", k, c[k], t[k]}' "$f" | sort -k4 -rn
      done ;;
    ncu)
      # Warp stalls, pipes and memory of one level-0 neighbour launch at n = 1024.
      timeout 200 ncu --kernel-name tiled_neighbours_f64 --launch-count 1 --section WarpStateStats --section ComputeWorkloadAnalysis \
        --section MemoryWorkloadAnalysis --section Occupancy --section SpeedOfLight $b profile --generate 256,1024 > "$OUT/ncu-neighbours.txt" 2>&1
      grep -E "Stall|Throughput|Pipe|Occupancy|Registers|Issue|Hit Rate|Warp Cycles" "$OUT/ncu-neighbours.txt" | head -40 ;;
    sanitize)
      san=$(ls .gpu/tests/gpu_sanitize-* | head -1)
      for filter in ${SAN_FILTER:-tiled}; do
        for tool in memcheck racecheck synccheck; do
          echo "== $tool $filter" | tee -a "$OUT/sanitizer.log"
          timeout ${TS:-90} compute-sanitizer --tool $tool --error-exitcode 9 $san --test-threads=1 $filter 2>&1 | tail -3 | tee -a "$OUT/sanitizer.log"
        done
      done ;;
    tf32)
      for p in ${PRODUCTS:-fma tf32 tf32x3}; do
        m=blocktri-gpu; [ $p = fma ] && m=${METHODS:-blocktri-gpu,vendor-schur}
        timeout ${T:-200} $b bench --full --suites fp64-sweep --block-sizes ${SIZES:-128,256,512,1024,2048} --precision f32 --methods $m \
          --f32-products $p --runs ${RUNS:-3} --out-dir "$OUT/bench-f32-$p" > "$OUT/bench-f32-$p.log" 2>&1
        echo "### f32 $p"; grep -E "^\|" "$OUT/bench-f32-$p/report.md" 2>/dev/null | head -40
      done ;;
    mixed)
      for p in ${PRODUCTS:-fma tf32x3}; do
        m=blocktri-gpu-mixed; [ $p = fma ] && m=${METHODS:-blocktri-gpu,blocktri-gpu-mixed,vendor-schur,cudss}
        timeout ${T:-200} $b bench --full --suites fp64-sweep --block-sizes ${SIZES:-128,256,512,1024} --precision f64 --methods $m \
          --f32-products $p --runs ${RUNS:-3} --out-dir "$OUT/bench-mixed-$p" > "$OUT/bench-mixed-$p.log" 2>&1
        echo "### mixed $p"; grep -E "^\|" "$OUT/bench-mixed-$p/report.md" 2>/dev/null | head -40
      done ;;
    chain)
      # Batches: the chain engine against nested dissection (rows / panel) and the peers.
      for fam in ${FAMS:-auto chain rows panel}; do
        case $fam in rows) ns=16 ;; panel) ns=32,64 ;; *) ns=${NS:-16,32,64} ;; esac
        m=blocktri-gpu; [ $fam = auto ] && m=${METHODS:-blocktri-gpu,vendor-seq,vendor-schur,cudss}
        timeout ${T:-200} $b bench --full --suites batch --batches ${BATCHES:-64,132,264,528,1024,4096} --nblocks ${NBS:-64} \
          --block-sizes $ns --precision ${PREC:-f64} --methods $m --kernels $fam --runs ${RUNS:-5} --out-dir "$OUT/bench-chain-$fam" > "$OUT/bench-chain-$fam.log" 2>&1
        echo "### $fam"; grep -E "^\|" "$OUT/bench-chain-$fam/report.md" 2>/dev/null | head -70
      done ;;
    bench)
      timeout ${T:-540} $b bench --full --suites fp64-sweep --block-sizes ${SIZES:-32,64,128,256,512,1024,2048} --precision ${PREC:-f64} \
        --methods ${METHODS:-blocktri-gpu,vendor-schur,vendor-seq,cudss} --runs ${RUNS:-5} --out-dir "$OUT/bench-sweep" > "$OUT/bench-sweep.log" 2>&1
      cat "$OUT/bench-sweep/report.md" 2>/dev/null | head -60 ;;
    families)
      for fam in auto tiled; do
        timeout 200 $b bench --suites horizon,fp64-sweep --block-sizes 32,64,96,128 --nblocks 512,4096 --methods blocktri-gpu --kernels $fam \
          --precision ${PREC:-f64} --out-dir "$OUT/fam-$fam" > /dev/null 2>&1
        grep -E "factor" "$OUT/fam-$fam/rows.csv" | cut -d, -f1-12 | head -30
      done ;;
  esac
done
for d in "$OUT"/bench-*/ "$OUT"/fam-*/; do [ -d "$d" ] && tar czf "${d%/}.tgz" -C "$d" . && rm -rf "$d"; done
ls -la "$OUT"
