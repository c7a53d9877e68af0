#!/usr/bin/env bash
# Call 2: ncu SASS samples of b's blocked kernels (a lone-node single launch and a crowded
# level 0), then the benchmark: b with peers, base alone, same call. OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
mkdir -p /tmp/cudss && gunzip -c .gpub/cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}; export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u) | tee -a "$OUT/device.txt"
steps=${*:-ncu bench}
if [[ " $steps " == *" ncu "* ]]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  one() { # name kernel-regex generate
    timeout 150 $NCU --kernel-name regex:$2 --launch-count 1 --set full --section SourceCounters \
      --warp-sampling-interval 0 --warp-sampling-buffer-size 536870912 -f -o $OUT/$1 $B/blocktri-b profile --generate $3 --repeat 1 > $OUT/ncu-$1.log 2>&1
    echo "ncu $1 rc=$?"
    $NCU --import $OUT/$1.ncu-rep --page source --csv --print-source sass > $OUT/sass-$1.csv 2>&1
    $NCU --import $OUT/$1.ncu-rep --page details > $OUT/details-$1.txt 2>&1
    grep -E "^ +(Duration|Elapsed Cycles|Registers Per Thread|Executed Instructions) " $OUT/details-$1.txt | head -6
    rm -f $OUT/$1.ncu-rep
  }
  one lone 'factor_blocked_dataflow64_f64$' 64,64
  one level0 'factor_blocked64_f64$' 4096,64
  tar -C $OUT -cJf $OUT/ncu.tar.xz sass-lone.csv sass-level0.csv details-lone.txt details-level0.txt && rm -f $OUT/sass-*.csv $OUT/details-*.txt
fi
if [[ " $steps " == *" bench "* ]]; then
  r() { timeout 250 "$@" > /dev/null 2>&1; }
  sum() { echo "$1: $(grep -E '\| (factor|solve|factor\+solve) \|' $OUT/$1/report.md | awk -F'|' '{printf "S=%s N=%s n=%s %s %s %s | ", $2, $3, $4, $5, $6, $7}')"; }
  for p in f64 f32; do
    r $B/blocktri-b bench --full --suites fp64-sweep --block-sizes 32,64,128 --precision $p --methods blocktri-gpu,vendor-schur,cudss --runs 5 --out-dir $OUT/sweep-$p-b
    r $B/blocktri-base bench --full --suites fp64-sweep --block-sizes 32,64,128 --precision $p --methods blocktri-gpu --runs 5 --out-dir $OUT/sweep-$p-base
    sum sweep-$p-b; sum sweep-$p-base
  done
  r $B/blocktri-b bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu,cudss --runs 5 --out-dir $OUT/hz-b
  r $B/blocktri-base bench --full --suites horizon --batches 1 --nblocks 64,512,4096,16384 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/hz-base
  sum hz-b; sum hz-base
  for v in b base; do r $B/blocktri-$v bench --full --suites batch --batches 1024 --nblocks 64 --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 5 --out-dir $OUT/batch-$v; sum batch-$v; done
  for v in b base; do r $B/blocktri-$v bench --full --suites fp64-sweep --block-sizes 32,64 --precision f64 --methods blocktri-gpu --runs 7 --out-dir $OUT/sweep2-$v; sum sweep2-$v; done
  tar -C $OUT -cJf $OUT/bench.tar.xz sweep-f64-b sweep-f64-base sweep-f32-b sweep-f32-base hz-b hz-base batch-b batch-base sweep2-b sweep2-base
fi
date -u >> "$OUT/device.txt"
