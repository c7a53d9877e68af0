set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/bin ] || (cd .gpub && tar -xJf bundle.tar.xz)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
M=sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warp_latency_per_inst_issued.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum,gpu__time_duration.sum,launch__registers_per_thread
for v in base new; do
  bin=.gpub/bin/blocktri; [ $v = base ] && bin=.gpub/bin/blocktri-base
  for k in tiled_wide_neighbours tiled_update_f64; do
    timeout 200 $NCU --kernel-name regex:$k --launch-skip 4 --launch-count 1 --metrics $M $bin profile --generate 256,1024 --repeat 1 > $OUT/ncu-$v-$k.log 2>&1
    echo "== $v $k"; grep -E "^\s+(sm__|smsp__|l1tex__|gpu__|launch__)" $OUT/ncu-$v-$k.log | awk '{print $1, $NF}'
  done
done
