#!/usr/bin/env bash
# Builds what the GPU machine runs into .gpu/ (sm_80 + sm_90 PTX): the test executables
# that need a GPU or none (not the PTX builder's, which need cargo), the binaries, and the
# criterion CPU bench; stripped to stay under the 64 MiB that travels.
set -euo pipefail
cd "$(dirname "$0")/.."
export BLOCKTRI_PTX_ARCHS=sm_80,sm_90
bash ../shared/gpu/pack.sh .gpu >/dev/null
rm -f .gpu/tests/blocktri_ptx-* .gpu/tests/fresh_crate-*
exe=$(cargo bench --bench cpu_solvers --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cpu_solvers":
        print(m["executable"])' | tail -1)
cp "$exe" .gpu/bin/cpu_solvers_bench
strip .gpu/bin/* .gpu/tests/* 2>/dev/null || true
du -sh .gpu
