#!/usr/bin/env bash
# Call 6 (review mend): prep's loops through the shared tile::for_each_rc / stage_async
# (also selinv's staging) against the committed fb26957 kernels (blocktri-base); tests.
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
for g in "2048,128 f64" "1024,256 f64" "2048,128 f32" "1024,256 f32"; do set -- $g
  for v in base new base new; do
    bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
    echo "$1 $2 $v $(timeout 30 $bin profile --generate $1 --precision $2 --repeat 2 2>&1 | awk '$1 ~ /tiled_prep/ {print "regs", $6, "us", $NF}')"
  done
done
for t in errors selinv; do
  timeout 60 .gpub/tests/$t --include-ignored --test-threads=3 > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-$t.log" | head -8
done
timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 .gpub/tests/gpu_sanitize --test-threads=1 --exact sanitize_cholesky_tiled > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' "$OUT/memcheck.log" | tr '\n' ' ')"
for f in "$OUT"/*.log; do [ -f "$f" ] && tail -c 20000 "$f" > "$OUT/t" && mv "$OUT/t" "$f"; done
