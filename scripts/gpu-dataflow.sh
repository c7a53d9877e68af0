#!/usr/bin/env bash
# The single-launch sweeps (rows, panel, blocked) on the GPU machine (after scripts/gpu-pack.sh):
#   bash scripts/gpu-dataflow.sh check   GPU tests, compute-sanitizer on the family cases (racecheck
#                                        RACE_REPEATS more times: its timing exposes ordering bugs), profiles
#   bash scripts/gpu-dataflow.sh bench   horizon S = 1 with the peers, then the per-level launches
#                                        (BLOCKTRI_DATAFLOW_PER_SM=0; SIZES, NBLOCKS, PRECS, RUNS)
#   bash scripts/gpu-dataflow.sh all     both
# Output: $OUT/dataflow-<part>.tgz
set -u
source "$(dirname "$0")/gpu-env.sh"
B=.gpu/bin/blocktri
D=$OUT/dataflow; mkdir -p "$D"
PART=${1:-check}
case "$PART" in
check|all)
  .gpu/tests/gpu_cholesky-* single_launch both_kernel_families --test-threads 1 > "$D/tests.log" 2>&1; echo "tests rc=$?"
  grep -E "test result|panicked|FAILED" "$D/tests.log" | head
  mkdir -p "$D/san-family" "$D/san-large"
  run_sanitizers every_family "$D/san-family"
  run_sanitizers sanitize_cholesky_large "$D/san-large"
  for i in $(seq ${RACE_REPEATS:-3}); do for f in every_family sanitize_cholesky_large; do
    timeout 200 compute-sanitizer --tool racecheck .gpu/tests/gpu_sanitize-* $f > "$D/race-$f-$i.log" 2>&1
    echo "racecheck $f #$i rc=$?"
  done; done
  for p in 4 0; do for g in ${PROFILE:-16384,16 4096,16 64,16 16384,8 1024,64,16}; do
    echo "== per-SM $p $g"; BLOCKTRI_DATAFLOW_PER_SM=$p $B profile --generate $g --repeat 3 2>&1 | tail -8
  done; done > "$D/profile.txt" 2>&1
  ;;&
bench|all)
  M=blocktri-gpu,vendor-schur,vendor-seq,cudss
  $B bench --full --runs ${RUNS:-10} --suites horizon --precision ${PRECS:-f64} --batches 1 --nblocks ${NBLOCKS:-64,512,4096,16384} \
     --block-sizes ${SIZES:-8,16} --methods $M --out-dir "$D/horizon" > "$D/horizon.log" 2>&1; echo "bench rc=$?"
  BLOCKTRI_DATAFLOW_PER_SM=0 $B bench --full --runs ${RUNS:-10} --suites horizon --precision ${PRECS:-f64} --batches 1 \
     --nblocks ${NBLOCKS:-64,512,4096,16384} --block-sizes ${SIZES:-8,16} --methods blocktri-gpu --out-dir "$D/levels" > "$D/levels.log" 2>&1
  echo "levels rc=$?"
  ;;
esac
tar czf "$OUT/dataflow-$PART.tgz" -C "$OUT" dataflow && rm -rf "$D"
