#!/usr/bin/env bash
# Warp node body of the single-launch factor (issue #11): tests, sanitizers, profiles, A/B bench against the three-warp body.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/b"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
export BLOCKTRI_BIN=$PWD/$B/blocktri
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; date -u) | tee "$OUT/device.txt"
steps=${*:-tests sanitize profile}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_cholesky errors recovery mpc}; do
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
for g in 16384,16 4096,16 16384,8 4096,8; do for body in warp rows; do
  echo "== $body $g"; BLOCKTRI_DATAFLOW_BODY=$body timeout 60 $B/blocktri profile --generate $g --repeat 3 2>&1 | tail -22
done; done > "$OUT/profile.txt" 2>&1
grep -E "^==|single|total|factor" "$OUT/profile.txt" | head -60
fi
if [[ " $steps " == *" ab "* ]]; then
for i in ${ROUNDS:-1 2}; do for body in warp rows; do
  BLOCKTRI_DATAFLOW_BODY=$body timeout 240 $B/blocktri bench --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 4,8,16 --precision ${PRECS:-f64} --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/$body-$i" > "$OUT/bench-$body-$i.log" 2>&1
  echo "== bench $body $i rc=$?"
done; done
fi
if [[ " $steps " == *" peers "* ]]; then
timeout 400 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16 --precision f64,f32 --methods blocktri-gpu,vendor-schur,vendor-seq,cudss --runs 10 --out-dir "$OUT/b/peers" > "$OUT/bench-peers.log" 2>&1
echo "== peers rc=$?"
fi
[ -d "$OUT/b" ] && ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . && rm -rf "$OUT/b"
tar czf /tmp/results.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/results.tgz "$OUT/results.tgz"
