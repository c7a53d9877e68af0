#!/usr/bin/env bash
# Call 7: the arrow tests again, with BLOCKTRI_BIN set (call 6 carried no binary, so the CLI
# test could not start it).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
BLOCKTRI_BIN=$PWD/.gpub/bin/blocktri timeout 150 .gpub/tests/arrow --include-ignored --test-threads=4 > "$OUT/test-arrow.log" 2>&1
echo "arrow rc=$? $(grep -E 'test result' "$OUT/test-arrow.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-arrow.log" | head -12
