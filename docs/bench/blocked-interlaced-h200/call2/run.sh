#!/usr/bin/env bash
# Call 2: the committed form (the interlaced blocked factor in kernels of their own,
# factor_solve_blocked*, so that the factor alone runs base's kernels) against base (36144ae),
# S = 1, n = 32 / 64, f64 and f32; #11's grid beside vendor-schur and cuDSS; GPU tests and
# sanitizers (racecheck on a case sized for it).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
r() { timeout 150 "$@" > /dev/null 2>&1; }
s1() { r $B/$1 bench --full --suites fp64-sweep,horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 32,64 --precision $2 --methods blocktri-gpu --runs 5 --out-dir $OUT/$3; echo "$3 done"; }
for v in blocktri-base blocktri; do s1 $v f64 f64-$v-1; done
for v in blocktri-base blocktri; do s1 $v f32 f32-$v-1; done
for v in blocktri-base blocktri; do s1 $v f64 f64-$v-2; done
for p in f64 f32; do
  r $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 32,64 --precision $p --methods blocktri-gpu,vendor-schur,cudss --runs 5 --out-dir $OUT/grid-$p; echo "grid-$p done"
done
for t in gpu_cholesky errors gpu_transfers; do
  timeout 200 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -12
done
for tc in "memcheck sanitize_cholesky_blocked_interlaced" "memcheck sanitize_cholesky_every_family" "synccheck sanitize_cholesky_blocked_interlaced" "racecheck sanitize_cholesky_blocked_interlaced"; do set -- $tc
  timeout 200 compute-sanitizer --tool $1 --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact $2 > "$OUT/$1-$2.log" 2>&1
  echo "$1 $2 rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$1-$2.log" | tr '\n' ' ')"
done
mkdir -p $OUT/tests && mv $OUT/test-*.log $OUT/tests/
for f in "$OUT"/*.log "$OUT"/tests/*.log; do [ -f "$f" ] && tail -c 30000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
tar -C $OUT -cJf $OUT/results.tar.xz $(cd $OUT && ls -d f64-* f32-* grid-* tests) && rm -rf $OUT/f64-* $OUT/f32-* $OUT/grid-* $OUT/tests
date -u >> "$OUT/device.txt"
