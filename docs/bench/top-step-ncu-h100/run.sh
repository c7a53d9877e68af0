#!/usr/bin/env bash
# ncu --set full on the tiled engine's top-level launches at n = 256, N = 1024 (and the
# level-0 potrf), with per-instruction stall samples (SASS). Usage: OUT=... bash .gpub/ncu.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p $OUT
[ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
b=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee $OUT/device.txt
$b profile --generate 1024,256 --repeat 1 > $OUT/profile-1024x256.txt 2>&1
one() { # kernel, launches to skip, tag
  timeout 150 ncu --kernel-name $1 --launch-skip $2 --launch-count 1 --set full --import-source no -o "$OUT/$3" \
    $b profile --generate 1024,256 --repeat 1 > /dev/null 2>&1
  ncu --import "$OUT/$3.ncu-rep" --print-details all > "$OUT/$3.txt" 2>&1
  ncu --import "$OUT/$3.ncu-rep" --page source --csv --print-source sass > "$OUT/$3-sass.csv" 2>&1
  ncu --import "$OUT/$3.ncu-rep" --page raw --csv > "$OUT/$3-raw.csv" 2>&1; gzip -f "$OUT/$3-raw.csv"
  rm -f "$OUT/$3.ncu-rep"; gzip -f "$OUT/$3-sass.csv"
  echo "== $3"; grep -E "^    Duration|Warp Cycles Per Issued|Issued Instructions  |Elapsed Cycles  " "$OUT/$3.txt" | head -4
  zcat "$OUT/$3-raw.csv.gz" | python3 -c "
import csv,sys
r=list(csv.reader(sys.stdin)); h,v=r[0],r[-1]
xs=[(h[i],v[i]) for i in range(len(h)) if 'average_warps_issue_stalled' in h[i] and 'per_issue_active' in h[i]]
xs=[(k.split('stalled_')[1].split('_per')[0],float(x.replace(',',''))) for k,x in xs if x.replace(',','').replace('.','',1).isdigit()]
print(' '.join(f'{k}={x:.2f}' for k,x in sorted(xs,key=lambda t:-t[1])[:8]))
"
}
# n = 256, N = 1024: 11 levels of 4 potrf, 4 trsm, 3 update launches; level 10 is the top.
one tiled_potrf_f64 41 potrf-top
one tiled_potrf_f64 1 potrf-l0
one tiled_update_f64 31 update-top
one tiled_trsm_f64 41 trsm-top
tar czf /tmp/r.tgz -C $OUT . && find $OUT -mindepth 1 -delete && mv /tmp/r.tgz $OUT/results.tgz
