#!/usr/bin/env bash
# Everything that needs the GPU machine, in one call (the machine keeps nothing):
#   bash scripts/gpu-check.sh [tests|sanitize|bench-quick|bench-full|all]...
# Expects .gpu/ from ../shared/gpu/pack.sh and, for cuDSS, .cudss/libcudss.so.0.gz.
# Logs and benchmark outputs go to $OUT (or ./gpu-out).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
steps=${*:-all}
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
bin=.gpu/bin/blocktri
run() { echo "== $*"; timeout "${T:-1200}" "$@"; echo "exit $?"; }
for step in $steps; do
  case $step in
    tests|all)
      run $bin info 2>&1 | tee -a "$OUT/tests.log"
      bash .gpu/run-tests.sh 2>&1 | tee -a "$OUT/tests.log" | grep -E "^==|test result|FAILED|panicked|gpu machine" ;;&
    sanitize|all)
      san=$(ls .gpu/tests/gpu_sanitize-* | head -1)
      for tool in memcheck racecheck synccheck; do
        T=900 run compute-sanitizer --tool $tool --error-exitcode 9 $san --test-threads=1 2>&1 | tail -25 | tee -a "$OUT/sanitizer.log"
      done ;;&
    bench-quick|all)
      T=900 run $bin bench --out-dir "$OUT/bench-quick" 2>&1 | tee "$OUT/bench-quick.log" | tail -60 ;;&
    bench-full)
      T=1500 run $bin bench --full --out-dir "$OUT/bench-full" 2>&1 | tee "$OUT/bench-full.log" | tail -80 ;;&
    *) ;;
  esac
done
for d in "$OUT"/bench-*/; do [ -d "$d" ] && tar czf "${d%/}.tgz" -C "$d" . && rm -rf "$d"; done
ls -la "$OUT"
