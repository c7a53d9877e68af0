#!/usr/bin/env bash
# Call 5 (second try, N = 40000 at n = 1: racecheck ran past 150 s at 120000): compute-sanitizer memcheck, synccheck, racecheck on sanitize_segments_on_the_edges
# with the n = 1 case added (the rows solves' edge_from path: three columns in batches of more
# than 4096 blocks), on the committed form (two lanes, make_room). Also the VM's huge-page
# settings (the inverse into a new Vec is bound by first-touch page faults, entry 39).
set -u; OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; [ -d .gpub/tests ] || (cd .gpub && tar -xJf bundle.tar.xz)
T=.gpub/tests
(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; nproc; date -u;
 echo "THP enabled: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)";
 echo "THP defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)") | tee "$OUT/device.txt"
timeout 100 $T/gpu_sanitize --include-ignored --exact sanitize_segments_on_the_edges > "$OUT/plain.log" 2>&1
echo "plain rc=$? $(grep -E 'test result' "$OUT/plain.log")"
CS=compute-sanitizer; command -v $CS >/dev/null || CS=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck synccheck racecheck; do
  timeout 400 $CS --tool $tool --error-exitcode 9 $T/gpu_sanitize --include-ignored --exact sanitize_segments_on_the_edges > "$OUT/$tool.log" 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' "$OUT/$tool.log" | tr '\n' ' ')"
done
tar -C $OUT -cJf $OUT/logs.tar.xz $(cd $OUT && ls *.log)
(cd $OUT && rm -f *.log)
date -u >> "$OUT/device.txt"
