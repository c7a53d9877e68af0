#!/usr/bin/env bash
# Everything that needs the GPU machine, in one call (the machine keeps nothing):
#   bash scripts/gpu-check.sh [tests|sanitize|example|criterion|bench-quick|bench-full]...
# Expects .gpu/ from scripts/gpu-pack.sh (unpacked here) and, for cuDSS, .cudss/libcudss.so.0.gz.
# Logs and benchmark outputs (one .tgz per benchmark run) go to $OUT (or ./gpu-out).
#   SUITES=horizon PREC=f64,f32 bash scripts/gpu-check.sh bench-full   runs part of the full sweep;
#   ARGS="--batches 1024 --block-sizes 32,64" adds bench options, TAG names the output.
set -u
source "$(dirname "$0")/gpu-env.sh"
steps=${*:-tests sanitize example}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"
bin=.gpu/bin/blocktri
run() { echo "== $*"; timeout "${T:-1200}" "$@"; echo "exit $?"; }
for step in $steps; do
  case $step in
    tests)
      run $bin info 2>&1 | tee -a "$OUT/tests.log"
      bash .gpu/run-tests.sh 2>&1 | tee -a "$OUT/tests.log" | grep -E "^==|test result|FAILED|panicked|gpu machine" ;;
    sanitize)
      san=$(ls .gpu/tests/gpu_sanitize-* | head -1)
      for tool in memcheck racecheck synccheck; do
        T=400 run compute-sanitizer --tool $tool --error-exitcode 9 $san --test-threads=1 2>&1 | tail -4 | tee -a "$OUT/sanitizer.log"
        T=200 run compute-sanitizer --tool $tool --error-exitcode 9 .gpu/bin/custom-kernel 100000 2>&1 | tail -4 | tee -a "$OUT/sanitizer.log"
        # The tiled case again with every neighbour launch on the wide products (the
        # sanitizer cases are too small for the dispatch to pick them).
        BLOCKTRI_WIDE_WAVES=0 T=200 run compute-sanitizer --tool $tool --error-exitcode 9 $san sanitize_cholesky_tiled --test-threads=1 2>&1 | tail -4 | tee -a "$OUT/sanitizer.log"
      done ;;
    example)
      run .gpu/bin/custom-kernel 16777216 2>&1 | tee "$OUT/example.log" ;;
    criterion)
      T=500 run .gpu/bin/cpu_solvers_bench --bench --noplot 2>&1 | grep -E "^(block|tridiag)|time:" > "$OUT/criterion.log" ;;
    bench-quick)
      T=500 run $bin bench --out-dir "$OUT/bench-quick" 2>&1 | tee "$OUT/bench-quick.log" | tail -30 ;;
    bench-full)
      tag=${TAG:-${SUITES:-all}}; tag=${tag//,/-}
      args=(--full --runs ${RUNS:-10} --max-minutes ${MAXMIN:-8} --out-dir "$OUT/bench-full-$tag"); [ -n "${SUITES:-}" ] && args+=(--suites "$SUITES"); [ -n "${PREC:-}" ] && args+=(--precision "$PREC")
      # shellcheck disable=SC2206  # ARGS is split into options on purpose
      args+=(${ARGS:-})
      T=${T:-580} run $bin bench "${args[@]}" > "$OUT/bench-full-$tag.log" 2>&1; tail -3 "$OUT/bench-full-$tag.log" ;;
    *) echo "unknown step $step" ;;
  esac
done
for d in "$OUT"/bench-*/; do [ -d "$d" ] && tar czf "${d%/}.tgz" -C "$d" . && rm -rf "$d"; done
ls -la "$OUT"
