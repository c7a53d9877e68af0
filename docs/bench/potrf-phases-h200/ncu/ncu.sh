set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"; $NCU --version | tail -1
for v in base new; do
  bin=$B/blocktri; [ $v = base ] && bin=$B/blocktri-base
  timeout 200 $NCU --kernel-name regex:tiled_potrf --launch-skip 22 --launch-count 1 --set full --section SourceCounters --warp-sampling-interval 0 --warp-sampling-buffer-size 536870912 -f -o $OUT/potrf-$v $bin profile --generate 2048,128 --repeat 1 > $OUT/ncu-$v.log 2>&1
  echo "$v rc=$?"; tail -3 $OUT/ncu-$v.log
  $NCU --import $OUT/potrf-$v.ncu-rep --page details > $OUT/details-$v.txt 2>&1
  $NCU --import $OUT/potrf-$v.ncu-rep --page source --csv --print-source sass > $OUT/sass-$v.csv 2>&1
  grep -E "Duration|Elapsed Cycles|SM Active Cycles|Registers Per|Local Memory|Executed Instructions  " $OUT/details-$v.txt | head -12
  ls -la $OUT/sass-$v.csv; head -c 600 $OUT/sass-$v.csv
done
