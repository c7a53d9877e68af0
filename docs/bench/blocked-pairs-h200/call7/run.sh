#!/usr/bin/env bash
# Call 7: racecheck of the committed build (090757f) on the every-family case.
set -u; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
timeout 165 compute-sanitizer --tool racecheck --error-exitcode 9 .gpub/tests/gpu_sanitize --include-ignored --test-threads=1 --exact sanitize_cholesky_every_family > "$OUT/racecheck-sanitize_cholesky_every_family.log" 2>&1
echo "racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|test result' "$OUT/racecheck-sanitize_cholesky_every_family.log" | tr '\n' ' ')"
tail -c 20000 "$OUT/racecheck-sanitize_cholesky_every_family.log" > $OUT/t && mv $OUT/t "$OUT/racecheck-sanitize_cholesky_every_family.log"
date -u >> "$OUT/device.txt"
