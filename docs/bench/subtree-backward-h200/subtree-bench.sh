#!/usr/bin/env bash
# Subtree backward solve (perf-notes entry 71): profiles, A/B in one binary
# (BLOCKTRI_SUBTREE_LEVELS=0 = one launch per level, as before), peers. OUT must be set.
set -u; mkdir -p "$OUT/b"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
lv() { if [ "$1" = off ]; then echo 0; else echo 99; fi; }
for g in 16384,16 16384,8 4096,16 1,50000,4; do for v in off on; do
  f=$OUT/profile-${g//,/x}-$v.txt; BLOCKTRI_SUBTREE_LEVELS=$(lv $v) timeout 60 $B/blocktri profile --generate $g --repeat 3 > $f 2>&1
  echo "$g $v backward $(awk '$1 ~ /backward/ {s+=$NF} END {print s+0}' $f) $(grep 'sum of' $f)"
done; done
run() { # variant round precision
  BLOCKTRI_SUBTREE_LEVELS=$(lv $1) timeout 200 $B/blocktri bench --suites horizon --batches 1 --nblocks 512,4096,16384 --block-sizes 4,8,16 \
    --precision $3 --methods blocktri-gpu --runs 10 --out-dir "$OUT/b/h-$3-$1-$2" > "$OUT/b/h-$3-$1-$2.log" 2>&1
  echo "$3 $1 $2: $(grep -E 'blocktri-gpu \| (solve|factor\+solve) \|' "$OUT/b/h-$3-$1-$2/report.md" | awk -F'|' '{printf "%s/%s %s %s; ", $3, $4, $6, $7}' | sed 's/  */ /g')"
}
for round in 1 2; do for v in off on; do run $v $round f64; done; done
for v in off on; do run $v 1 f32; done
timeout 280 $B/blocktri bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 8,16,32,64 --precision f64 \
  --methods blocktri-gpu,vendor-schur,cudss --runs 10 --out-dir "$OUT/b/peers" > "$OUT/b/peers.log" 2>&1
echo "peers rc=$?"
grep -E '\| (blocktri-gpu|cudss|vendor-schur) \| (factor|solve|factor\+solve) \|' "$OUT/b/peers/report.md" | awk -F'|' '{printf "%s/%s %s %s %s\n", $3, $4, $5, $6, $7}' | sed 's/  */ /g' | tr '\n' ';'
date -u >> "$OUT/device.txt"
tar czf "$OUT/bench.tgz" -C "$OUT/b" . ; rm -rf "$OUT/b"
