#!/usr/bin/env bash
# The blocked panel factor (KernelFamily::Blocked) against the panel kernels and the peers,
# on the GPU machine after scripts/gpu-pack.sh. Steps (default all): tests, sanitize,
# bench, profile, ncu (one lone top-level node of n = 64 in f64). Everything lands in
# $OUT/blocked.tgz.
set -u
source "$(dirname "$0")/gpu-env.sh"
b=.gpu/bin/blocktri; t=.gpu/tests
W="$OUT/blocked"; mkdir -p "$W"
for step in ${*:-tests sanitize bench profile}; do
  case $step in
    tests)
      for x in gpu_cholesky; do
        timeout 240 $t/$x-* ${FILTER:-} --test-threads 1 > "$W/test-$x.log" 2>&1; echo "$x rc=$?"; grep -E "test result|FAILED|panicked" "$W/test-$x.log" | head -5
      done ;;
    sanitize)
      run_sanitizers sanitize_cholesky_every_family "$W" ;;
    bench)
      # #10's rows: n = 32 / 64 at N n = 262144 and batches S = 1024, N = 64; both families,
      # both precisions, the peers in the same run.
      for P in ${PRECS:-f64 f32}; do
        for fam in panel blocked; do
          peers=""; [ $fam = blocked ] && peers=",vendor-schur,vendor-seq,cudss"
          timeout 200 $b bench --full --suites fp64-sweep --block-sizes 32,64 --precision $P --methods blocktri-gpu$peers \
            --kernels $fam --runs ${RUNS:-5} --out-dir "$W/sweep-$fam-$P" > "$W/sweep-$fam-$P.log" 2>&1
          timeout 200 $b bench --full --suites horizon --block-sizes 32,64 --nblocks 64 --batches 1024 --precision $P \
            --methods blocktri-gpu$peers --kernels $fam --runs ${RUNS:-5} --out-dir "$W/batch-$fam-$P" > "$W/batch-$fam-$P.log" 2>&1
          for d in sweep batch; do
            echo "== $d $fam $P"; grep -E "^\| " "$W/$d-$fam-$P/report.md" | head -24
          done
        done
      done ;;
    profile)
      for g in 8192,32 4096,64; do
        for fam in panel blocked; do
          $b profile --generate $g --kernels $fam > "$W/profile-$fam-$g.log" 2>&1
          echo "== profile $fam $g"; head -6 "$W/profile-$fam-$g.log"; tail -1 "$W/profile-$fam-$g.log"
        done
      done ;;
    ncu)
      ncu --kernel-name factor_blocked64_f64 --launch-skip 11 --launch-count 1 --set full -o "$W/top" \
        $b profile --generate 4096,64 --kernels blocked --repeat 1 > /dev/null 2>&1
      ncu --import "$W/top.ncu-rep" --print-details all > "$W/ncu-top.txt" 2>&1
      ncu --import "$W/top.ncu-rep" --page source --csv --print-source sass > "$W/ncu-top-sass.csv" 2>&1
      rm -f "$W/top.ncu-rep"
      grep -E "Duration|Issued Instructions  |Warp Cycles Per Issued" "$W/ncu-top.txt" | head -5 ;;
  esac
done
tar czf "$OUT/blocked.tgz" -C "$W" . && rm -rf "$W"
