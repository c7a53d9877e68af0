#!/usr/bin/env bash
# Single-launch solves load the node's factor blocks before waiting for their dependencies (issue #11):
# tests, sanitizers, solve profiles, A/B bench against the previous build (blocktri-base), peers.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/b"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
export BLOCKTRI_BIN=$PWD/$B/blocktri
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests sanitize profile}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_cholesky errors recovery mpc threads selinv}; do
  echo "== $t"; timeout 300 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1; echo "rc=$?"; grep -E "test result|FAILED|panicked" "$OUT/test-$t.log" | head -5
done
fi
if [[ " $steps " == *" sanitize "* ]]; then
for f in sanitize_cholesky_small sanitize_cholesky_every_family; do for tool in memcheck racecheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 .gpub/tests/gpu_sanitize $f > "$OUT/san-$f-$tool.log" 2>&1
  echo "$f $tool rc=$?"; grep -E "ERROR SUMMARY|test result" "$OUT/san-$f-$tool.log" | head -2
done; done
fi
if [[ " $steps " == *" profile "* ]]; then
for g in 16384,16 4096,16 64,64 4096,64 4096,32; do for bin in blocktri blocktri-base; do
  echo "== $bin $g"; timeout 60 $B/$bin profile --generate $g --repeat 3 2>&1 | grep -E "dataflow|solve|total" | tail -12
done; done > "$OUT/profile.txt" 2>&1
grep -E "^==|dataflow" "$OUT/profile.txt" | head -60
fi
if [[ " $steps " == *" ab "* ]]; then
for i in ${ROUNDS:-1 2}; do for bin in blocktri blocktri-base; do
  timeout 280 $B/$bin bench --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --precision ${PRECS:-f64} --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/$bin-$i" > "$OUT/bench-$bin-$i.log" 2>&1
  echo "== bench $bin $i rc=$?"
done; done
fi
if [[ " $steps " == *" peers "* ]]; then
timeout 500 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --precision ${PRECS:-f64} --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 10 --out-dir "$OUT/b/peers" > "$OUT/bench-peers.log" 2>&1
echo "== peers rc=$?"
fi
[ -d "$OUT/b" ] && ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . && rm -rf "$OUT/b"
tar czf /tmp/results.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/results.tgz "$OUT/results.tgz"
