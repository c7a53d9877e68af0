#!/usr/bin/env bash
# Node walks, second build (two-stage ring, 128 registers): per-kernel sums against the
# previous build. Usage: bash .gpub/walk2.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri; base=.gpub/bin/blocktri-base
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
sums() { # binary size name env...
  bin=$1; g=$2; name=$3; shift 3
  f="$OUT/sums-${g/,/x}-$name.txt"
  env "$@" timeout 100 $bin profile --generate $g --repeat 1 > "$f.raw" 2>&1
  awk '$NF ~ /^[0-9.]+$/ && NF >= 7 { s[$1] += $NF; c[$1]++; t += $NF; r[$1] = $6; if ($1 ~ /forward|backward/) v += $NF }
       END { for (k in s) printf "%-32s %5d launches %10.1f us  regs %s\n", k, c[k], s[k], r[k]; printf "solve %.1f us\ntotal %.1f us\n", v, t }' \
    "$f.raw" | sort -k4 -n -r > "$f"
  echo "== $g $name: $(grep -E '_node_|_diag_' $f | awk '{printf "%s %s | ", $1, $4}') $(grep -E '^(solve|total)' $f | tr '\n' ' ')"
}
for g in 2048,128 1024,256 512,512 256,1024; do
  sums $b $g walk
  sums $base $g base
done
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
