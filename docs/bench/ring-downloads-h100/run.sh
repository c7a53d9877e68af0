#!/usr/bin/env bash
# Ring downloads A/B (issue #12): tests, link rates, traces, host bench new/base alternating, peers.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/b"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
export BLOCKTRI_BIN=$PWD/$B/blocktri
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g | head -2; date -u) | tee "$OUT/device.txt"
steps=${*:-tests link bench}
if [[ " $steps " == *" tests "* ]]; then
for t in ${TESTS:-gpu_transfers external_layouts rayon_pool threads mpc selinv arrow errors recovery gpu_mixed gpu_cholesky}; do
  echo "== $t"; timeout 240 .gpub/tests/$t --include-ignored --test-threads=2 > "$OUT/test-$t.log" 2>&1; echo "rc=$?"; grep -E "test result|FAILED|panicked" "$OUT/test-$t.log" | head -5
done
fi
if [[ " $steps " == *" memcheck "* ]]; then
  echo "== memcheck"; timeout 400 compute-sanitizer --tool memcheck --error-exitcode 3 .gpub/tests/gpu_transfers --test-threads=1 staged chunked pinned page > "$OUT/memcheck-transfers.log" 2>&1; echo "rc=$?"; tail -4 "$OUT/memcheck-transfers.log"
fi
if [[ " $steps " == *" link "* ]]; then
for bin in blocktri blocktri-base; do
  echo "== link $bin"; timeout 150 $B/$bin info --transfers > "$OUT/link-$bin.log" 2>&1; grep -E "staged|link .*pinned  " "$OUT/link-$bin.log"
  echo "== trace $bin"; BLOCKTRI_TRACE=1 timeout 120 $B/$bin solve --generate 16384,16 > "$OUT/trace-$bin.log" 2>&1; grep -E "download|upload|solve|residual" "$OUT/trace-$bin.log" | tail -14
done
fi
if [[ " $steps " == *" bench "* ]]; then
for i in ${ROUNDS:-1 2}; do for bin in blocktri blocktri-base; do
  timeout 200 $B/$bin bench --suites horizon --nblocks 4096,16384 --block-sizes 8,16 --precision f64 --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/$bin-$i" > "$OUT/bench-$bin-$i.log" 2>&1
  echo "== bench $bin $i rc=$?"; grep -E "transfer" "$OUT/bench-$bin-$i.log" | head -12
done; done
fi
if [[ " $steps " == *" peers "* ]]; then
timeout 300 $B/blocktri bench --suites horizon --nblocks 4096,16384 --block-sizes 8,16 --precision f64 --methods blocktri-gpu,vendor-schur,cudss,cpu-threaded --runs 10 --out-dir "$OUT/b/peers" > "$OUT/bench-peers.log" 2>&1
echo "== peers rc=$?"; grep -E "transfer|factor\+solve " "$OUT/bench-peers.log" | head -30
fi
[ -d "$OUT/b" ] && ls "$OUT/b" | grep -q . && tar czf "$OUT/bench.tgz" -C "$OUT/b" . && rm -rf "$OUT/b"
# Everything in one archive (only a few files come back per call).
tar czf /tmp/results.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/results.tgz "$OUT/results.tgz"
