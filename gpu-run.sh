#!/usr/bin/env bash
set -u
rm -rf .gpu && mkdir -p .gpu && cp .gpub/bundle.tar.xz .gpu/
export OUT
source scripts/gpu-env.sh
R=$OUT/r; mkdir -p $R
timeout 300 ncu --clock-control none -k regex:tiled_wide_neighbours --launch-skip 2 --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv .gpu/bin/blocktri profile --generate 256,1024 > $R/ncu-wide-source.csv 2> $R/ncu-wide-source.err; echo rc=$?
wc -l $R/ncu-wide-source.csv; head -3 $R/ncu-wide-source.csv | cut -c1-600
timeout 200 ncu --clock-control none -k regex:tiled_update --launch-skip 2 --launch-count 1 --set full .gpu/bin/blocktri profile --generate 256,1024 > $R/ncu-update-full.txt 2>&1; echo rc=$?
grep -E "Duration|Compute \(SM\) Throughput|L2 Cache Throughput|Issue Slots Busy|No Eligible|Achieved Occupancy|Registers Per|excessive" $R/ncu-update-full.txt | head -12
tar czf $OUT/results.tgz -C $R . && rm -rf $R
