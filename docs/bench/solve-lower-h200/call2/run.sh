#!/usr/bin/env bash
# Session 2026-12-03 (afternoon), call 2: the committed form (fin = call 1's new with the
# blocked family's solve single launch from 2 nodes per SM at padded size 64 and 4 at 32)
# against base = a0f3da6, alternating, two rounds in f64, one in f32; the f32 start swept;
# #11's grid beside cuDSS and vendor-schur; GPU tests and the three sanitizers on fin.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT/r"; rm -rf .gpub/bin .gpub/tests; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin; T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee "$OUT/device.txt"
s1() { timeout 200 $B/blocktri-$1 bench --full --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes ${4:-32,64} --nrhs 1 \
  --precision $2 --methods blocktri-gpu --runs 7 --out-dir $OUT/r/$3 > /dev/null 2>&1; echo "$3 rc=$?"; }
for round in 1 2; do for v in base fin; do s1 $v f64 f64-$v-$round; done; done
for v in base fin; do s1 $v f32 f32-$v-1; done
for per in 1 2 4 8; do BLOCKTRI_SOLVE_DATAFLOW_PER_SM=$per s1 fin f32 f32-sdf$per; done
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
timeout 240 $B/blocktri-fin bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --nrhs 1 \
  --precision f64 --methods blocktri-gpu,vendor-schur,cudss --runs 7 --out-dir $OUT/r/peers > $OUT/r/peers.log 2>&1; echo "peers rc=$?"
timeout 280 $T/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/r/gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/r/gpu_cholesky.log" | tail -1)"
timeout 100 $T/gpu_mixed --include-ignored --test-threads=2 > "$OUT/r/gpu_mixed.log" 2>&1
echo "gpu_mixed rc=$? $(grep -E 'test result' "$OUT/r/gpu_mixed.log" | tail -1)"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for c in sanitize_column_solves sanitize_cholesky_every_family; do for tool in memcheck synccheck racecheck; do
  timeout 100 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --test-threads=1 --exact $c > "$OUT/r/$c-$tool.log" 2>&1
  echo "$c $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/r/$c-$tool.log" | tr '\n' ' ')"
done; done
tar -C $OUT -cJf $OUT/results.tar.xz r; rm -rf $OUT/r
date -u >> "$OUT/device.txt"
