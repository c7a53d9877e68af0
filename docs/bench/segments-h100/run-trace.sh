#!/usr/bin/env bash
# Segments, traced: where the host-to-host time of a capped-memory chain goes.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"; cd .gpub && tar -xJf bundle.tar.xz && cd ..
B=.gpub/bin
for case in "1,262144,16 256M" "1,1048576,16 1G" "1,32768,64 512M" "1,4096,256 1G" "1,1024,1024 2G"; do
  set -- $case
  echo "== solve --generate $1, device memory limit $2"
  BLOCKTRI_DEVICE_MEMORY_LIMIT=$2 BLOCKTRI_TRACE=1 timeout 150 $B/blocktri solve --generate $1 > "$OUT/trace-$1.txt" 2>&1
  grep -E "factor\+solve:.*first|residual|^error" "$OUT/trace-$1.txt"
  grep "^trace" "$OUT/trace-$1.txt" | python3 -c "
import sys,re,collections
s=collections.defaultdict(float);c=collections.Counter()
for l in sys.stdin:
    m=re.match(r'trace: (.*?)\s+([0-9.]+) ms',l)
    if m: s[m[1]]+=float(m[2]); c[m[1]]+=1
for k,v in sorted(s.items(),key=lambda x:-x[1])[:12]: print(f'{v:10.1f} {c[k]:5d} {k}')
"
done 2>&1 | tee "$OUT/summary.txt"
