#!/usr/bin/env bash
# Call 4: real memory pressure (gpu_memory_pressure: all but 1 GiB of the device held by the
# test), with make_room letting the segment path's idle second lane go, and a mutant that never
# lets it go (expected to fail with OutOfMemory); gpu_transfers, gpu_cholesky, errors on the
# form to commit (make_room is on every plan's allocation path).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; nproc; date -u) | tee "$OUT/device.txt"
for t in gpu_memory_pressure gpu_memory_pressure-mutant; do
  timeout 150 $T/$t --nocapture > "$OUT/test-$t.log" 2>&1
  echo "$t rc=$? $(grep -E 'test result' "$OUT/test-$t.log" | tail -1)"; grep -E "panicked|skipping" -A3 "$OUT/test-$t.log" | head -6
done
timeout 200 $T/gpu_transfers --include-ignored --test-threads=2 > "$OUT/test-gpu_transfers.log" 2>&1
echo "gpu_transfers rc=$? $(grep -E 'test result' "$OUT/test-gpu_transfers.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_transfers.log" | head -12
timeout 200 $T/gpu_cholesky --include-ignored --test-threads=3 > "$OUT/test-gpu_cholesky.log" 2>&1
echo "gpu_cholesky rc=$? $(grep -E 'test result' "$OUT/test-gpu_cholesky.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-gpu_cholesky.log" | head -12
timeout 100 $T/errors --include-ignored > "$OUT/test-errors.log" 2>&1
echo "errors rc=$? $(grep -E 'test result' "$OUT/test-errors.log" | tail -1)"; grep -E "FAILED|panicked" -A3 "$OUT/test-errors.log" | head -12
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
