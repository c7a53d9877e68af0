#!/usr/bin/env bash
# Subtree backward solve, first column's entries loaded before the tiles (v2) against v1 and
# against one launch per level (off = BLOCKTRI_SUBTREE_LEVELS=0), in one call. OUT must be set.
set -u; mkdir -p "$OUT/b"; (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for f in .gpub/ptx/*.ptx; do echo "$(basename $f .ptx) $(ptxas -arch=sm_90 -v $f -o /dev/null 2>&1 | grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | head -2 | tr '\n' ' ')"; done
bin() { case $1 in v1) echo $B/blocktri-v1;; *) echo $B/blocktri;; esac; }
lv() { if [ "$1" = off ]; then echo 0; else echo 99; fi; }
for g in 16384,16 16384,8 4096,16; do for v in off v1 v2; do
  f=$OUT/b/profile-${g//,/x}-$v.txt; BLOCKTRI_SUBTREE_LEVELS=$(lv $v) timeout 60 $(bin $v) profile --generate $g --repeat 3 > $f 2>&1
  echo "$g $v backward $(awk '$1 ~ /backward/ {s+=$NF} END {print s+0}' $f) $(grep 'sum of' $f)"
done; done
run() { # variant round
  BLOCKTRI_SUBTREE_LEVELS=$(lv $1) timeout 200 $(bin $1) bench --suites horizon --batches 1 --nblocks 4096,16384 --block-sizes 4,8,16 \
    --precision f64 --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/h-$1-$2" > "$OUT/b/h-$1-$2.log" 2>&1
  echo "$1 $2: $(grep -E 'blocktri-gpu \| (solve|factor\+solve) \|' "$OUT/b/h-$1-$2/report.md" | awk -F'|' '{printf "%s/%s %s %s; ", $3, $4, $6, $7}' | sed 's/  */ /g;s/factor+solve/fs/g')"
}
for round in 1 2; do for v in off v1 v2; do run $v $round; done; done
timeout 300 .gpub/tests/gpu_cholesky --include-ignored --test-threads=2 > "$OUT/b/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/b/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/b/test-gpu_cholesky.log" | head -12
for tool in memcheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 sanitize_cholesky_large sanitize_segments_on_the_edges > "$OUT/b/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/b/$tool.log" | tr '\n' ' ')"
done
date -u >> "$OUT/device.txt"
tar czf "$OUT/bench.tgz" -C "$OUT/b" . ; rm -rf "$OUT/b"
