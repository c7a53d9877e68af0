#!/usr/bin/env bash
# The committed build with the PTX index moved into blocktri-ptx: the GPU tests that load
# kernels; then `ncu` on the tiled engine's products at n = 1024 (N = 256): a level-0 wide
# neighbour launch (128 x 128 tiles, one 8-warp block per SM) with per-instruction
# sampling, a level-0 wide column-update pair and a late level-0 update_trsm
# (docs/perf-notes.md entries 23, 69: what binds the products).
# Usage (from the repository root, the bundle in .gpub as for scripts/gpu-ab.sh): OUT=... bash docs/bench/wide-product-ncu-h200/run.sh
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
B=.gpub/bin/blocktri
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u) | tee "$OUT/device.txt"
TESTS='gpu_modules errors gpu_cholesky' bash scripts/gpu-ab.sh tests
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
prof() { # name regex skip extra-args
  timeout 240 $NCU --kernel-name regex:$2 --launch-skip $3 --launch-count 1 --set full $4 -f -o $OUT/$1 $B profile --generate 256,1024 --repeat 1 > $OUT/ncu-$1.log 2>&1
  echo "ncu $1 rc=$?"
  $NCU --import $OUT/$1.ncu-rep --page details > $OUT/details-$1.txt 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|Elapsed Cycles|SM Active Cycles|Registers Per|Executed Ipc Active|Issue Slots Busy|SM Busy|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Warp Cycles Per Issued|Stall|Bank" $OUT/details-$1.txt | head -40
  grep -iE "pipe|tensor|dmma|shared|bank" $OUT/details-$1.txt | head -20
}
prof neighbours tiled_wide_neighbours 0 "--section SourceCounters --warp-sampling-interval 0 --warp-sampling-buffer-size 536870912"
$NCU --import $OUT/neighbours.ncu-rep --page source --csv --print-source sass > $OUT/sass-neighbours.csv 2>&1
$NCU --import $OUT/neighbours.ncu-rep --page raw --csv > $OUT/raw-neighbours.csv 2>&1
grep -oE '"(sm__pipe_tensor_op_dmma_cycles_active[^"]*|sm__inst_executed_pipe_tensor_op_dmma[^"]*|l1tex__data_bank_conflicts_pipe_lsu_mem_shared[^"]*|smsp__warp_issue_stalled_[a-z_]*_per_warp_active.pct)"' $OUT/raw-neighbours.csv | head -40 | tr '\n' ' '; echo
python3 - "$OUT/raw-neighbours.csv" <<'PY'
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
if len(rows)>=3:
    h,u,v=rows[0],rows[1],rows[2]
    for i,name in enumerate(h):
        if any(k in name for k in ("dmma","pipe_tensor","bank_conflicts_pipe_lsu_mem_shared","warp_issue_stalled","pipe_fp64","issue_active","inst_executed_pipe_lsu","shared_op_ld","lsu_mem_shared")) and ("pct" in name or name.endswith(".sum") or name.endswith(".avg") or "ratio" in name):
            print(name, u[i], v[i])
PY
prof wideupdate tiled_wide_update 8 ""
prof updatetrsm tiled_update_trsm 20 ""
for f in $OUT/sass-neighbours.csv $OUT/raw-neighbours.csv; do xz -9 $f; done; rm -f $OUT/*.ncu-rep; ls -la $OUT
