#!/usr/bin/env bash
# Builds what the GPU machine runs into .gpu/ (sm_80 + sm_90 PTX): the test executables
# that use the GPU (the CPU-only ones run in CI), the binaries, and the
# criterion CPU bench; stripped to stay under the 64 MiB that travels.
set -euo pipefail
cd "$(dirname "$0")/.."
export BLOCKTRI_PTX_ARCHS=sm_80,sm_90
bash ../shared/gpu/pack.sh .gpu >/dev/null
# Tests that never touch the GPU are covered by CI here; each executable embeds the PTX,
# so carrying them all would exceed what travels.
for t in blocktri_ptx fresh_crate blocktri_device blocktri_prims cpu_solvers custom_kernel_kernels plan_replay tile_routines emulated_kernels emulated_tiled rayon_pool fuzz_corpus; do
  rm -f .gpu/tests/$t-*
done
for t in .gpu/tests/*; do "$t" --list 2>/dev/null | grep ": test" >/dev/null || rm -f "$t"; done
exe=$(cargo bench --bench cpu_solvers --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cpu_solvers":
        print(m["executable"])' | tail -1)
cp "$exe" .gpu/bin/cpu_solvers_bench
strip .gpu/bin/* .gpu/tests/* 2>/dev/null || true
# One xz archive (the embedded PTX compresses well); scripts/gpu-check.sh unpacks it.
tar -C .gpu -cJf /tmp/blocktri-gpu-bundle.tar.xz bin tests run-tests.sh
rm -rf .gpu/bin .gpu/tests .gpu/run-tests.sh
mv /tmp/blocktri-gpu-bundle.tar.xz .gpu/bundle.tar.xz
du -sh .gpu
