#!/usr/bin/env bash
# The host path on the GPU machine, in one call:
#   bash scripts/gpu-host.sh [tests] [link] [probe] [cli] [bench] [ooc] [selinv]
# tests: the transfer, chunking, tridiagonal and error tests (TESTS= to choose others);
# link: `blocktri info --transfers` (CPU copies, pinned/pageable link, staged copies);
# probe: the same questions asked through PyTorch (scripts/host-path-probe.py), a reference;
# cli: `blocktri solve`/`invert` wall clock from host memory; bench: host-to-host rows
# beside the device-resident ones and the peers (SIZES_N, SIZES_n); ooc: a batch larger
# than the device (S = 1024, N = 16384, n = 16: 69 GB of input) through factor_solve;
# selinv: the selected-inversion sweep beside the factor (issue #13) and an arrowhead
# factor + solve (N = 8192, n = 32, a = 8) beside the plain one, from the CLI.
set -u
source "$(dirname "$0")/gpu-env.sh"
steps=${*:-tests link cli bench}
b=.gpu/bin/blocktri
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/device.txt"
nproc | sed 's/^/cpus: /' | tee -a "$OUT/device.txt"; free -g | head -2 | tee -a "$OUT/device.txt"
sed 's/^/transparent huge pages: /' /sys/kernel/mm/transparent_hugepage/enabled | tee -a "$OUT/device.txt"
for step in $steps; do
  case $step in
    tests)
      for t in ${TESTS:-gpu_transfers tridiag errors gpu_cholesky}; do
        exe=$(ls .gpu/tests/$t-* | head -1); export BLOCKTRI_BIN=$PWD/.gpu/bin/blocktri
        echo "== $t"; timeout ${TT:-200} $exe --test-threads=2 2>&1 | tee -a "$OUT/tests.log" | grep -E "test result|FAILED|panicked" 
      done ;;
    link)
      $b info --transfers 2>&1 | tee "$OUT/link.log" | tail -24 ;;
    probe)
      THREADS=8 python3 scripts/host-path-probe.py 2>&1 | tee "$OUT/probe.log" | tail -18 ;;
    cli)
      for g in 16384,16 4096,16 16384,8 1024,16384,16x; do
        [ "$g" = 1024,16384,16x ] && continue
        echo "== solve --generate $g"; timeout 120 $b solve --generate $g 2>&1 | tee -a "$OUT/cli.log" | grep -E "factor|refactor|residual|chunks"
      done
      for n in 4096 16384; do
        echo "== invert --generate $n"; timeout 120 $b invert --generate $n 2>&1 | tee -a "$OUT/cli.log" | grep -E "inverted|A X"
      done ;;
    bench)
      timeout ${T:-300} $b bench --suites horizon --nblocks ${SIZES_N:-4096,16384} --block-sizes ${SIZES_n:-8,16,64} --precision f64 \
        --methods blocktri-gpu,vendor-schur,cudss,cpu-threaded --runs ${RUNS:-10} --out-dir "$OUT/bench-host" > "$OUT/bench-host.log" 2>&1
      grep -E "transfer|factor\+solve " "$OUT/bench-host.log" | head -60
      timeout 200 $b bench --suites tridiag --tridiag-sizes ${TRI:-4096,16384} --precision f64 --methods gpu-fused,cpu-threaded \
        --runs 5 --out-dir "$OUT/bench-tri" > "$OUT/bench-tri.log" 2>&1
      grep -E "gpu|cpu" "$OUT/bench-tri.log" | head -20 ;;
    selinv)
      timeout ${T:-300} $b bench --full --suites selinv --precision f64 --methods blocktri-gpu,vendor-schur,cudss,cpu-threaded \
        --runs ${RUNS:-5} --out-dir "$OUT/bench-selinv" > "$OUT/bench-selinv.log" 2>&1
      grep -E "factor |selinv" "$OUT/bench-selinv.log" | head -30
      for a in 0 8; do
        echo "== solve --generate 8192,32 --arrow $a"; timeout 120 $b solve --generate 8192,32 --arrow $a 2>&1 | tee -a "$OUT/arrow.log" | grep -E "factor|residual"
      done ;;
    ooc)
      echo "== solve --generate ${OOC:-1024,16384,16}"
      /usr/bin/time -v timeout ${TO:-400} $b solve --generate ${OOC:-1024,16384,16} 2>&1 | tee "$OUT/ooc.log" | grep -E "problem|factor|residual|chunks|Maximum resident|Elapsed" ;;
  esac
done
for d in "$OUT"/bench-*/; do [ -d "$d" ] && tar czf "${d%/}.tgz" -C "$d" . && rm -rf "$d"; done
ls -la "$OUT"
