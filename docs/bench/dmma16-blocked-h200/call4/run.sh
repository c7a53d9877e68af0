#!/usr/bin/env bash
# Call 4: ncu of the committed build's blocked kernels (n5 = 7e5986c): a lone-node single
# launch (N = 64, n = 64) and a crowded level 0 (N = 4096, n = 64), details pages. OUT must be set.
set -u; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; date -u) | tee -a "$OUT/device.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
one() { # name kernel-regex generate
  timeout 150 $NCU --kernel-name regex:$2 --launch-count 1 --set full -f -o $OUT/$1 $B/blocktri-n5 profile --generate $3 --repeat 1 > $OUT/ncu-$1.log 2>&1
  echo "ncu $1 rc=$?"
  $NCU --import $OUT/$1.ncu-rep --page details > $OUT/details-$1.txt 2>&1
  $NCU --import $OUT/$1.ncu-rep --page raw --csv > $OUT/raw-$1.csv 2>&1
  grep -E "^ +(Duration|Elapsed Cycles|Registers Per Thread|Executed Ipc Active|Issue Slots Busy|Achieved Active Warps Per SM|No Eligible|One or More Eligible) " $OUT/details-$1.txt | head -10
  python3 - "$OUT/raw-$1.csv" <<'PY'
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
h=rows[0]; v=rows[2] if len(rows)>2 else rows[1]
d=dict(zip(h,v))
st=[(k,d[k]) for k in h if k.startswith('smsp__average_warp_latency_issue_stalled_') and k.endswith('.ratio')]
tot=[]
for k,x in st:
    try: tot.append((float(x.replace(',','')),k.replace('smsp__average_warp_latency_issue_stalled_','').replace('.ratio','')))
    except: pass
tot.sort(reverse=True); print('stalls per issue:', ', '.join(f'{n} {x:.2f}' for x,n in tot[:9]))
for k in h:
    if 'pipe_fp64' in k and 'pct_of_peak_sustained_active' in k or ('inst_executed_pipe_' in k and 'dmma' in k.lower()) or ('pipe_tensor' in k and 'pct' in k):
        print(k, d[k])
PY
  rm -f $OUT/$1.ncu-rep
}
one lone 'factor_blocked_dataflow64_f64$' 64,64
one level0 'factor_blocked64_f64$' 4096,64
tar -C $OUT -cJf $OUT/ncu.tar.xz details-lone.txt details-level0.txt raw-lone.csv raw-level0.csv && rm -f $OUT/details-*.txt $OUT/raw-*.csv
date -u >> "$OUT/device.txt"
