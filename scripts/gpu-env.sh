# Sourced by the scripts/gpu-*.sh that run on the GPU machine: unpacks .gpu/bundle.tar.xz
# (from scripts/gpu-pack.sh) and cuDSS (.cudss/libcudss.so.0.gz) when present, sets $OUT.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
[ -f .gpu/bundle.tar.xz ] && [ ! -d .gpu/bin ] && tar -C .gpu -xJf .gpu/bundle.tar.xz
# The CLI tests run the carried binary (the tests run away from their build).
[ -x .gpu/bin/blocktri ] && export BLOCKTRI_BIN=$PWD/.gpu/bin/blocktri
if [ -f .cudss/libcudss.so.0.gz ]; then
  mkdir -p /tmp/cudss && gunzip -c .cudss/libcudss.so.0.gz > /tmp/cudss/libcudss.so.0
  export LD_LIBRARY_PATH=/tmp/cudss:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  export BLOCKTRI_CUDSS=/tmp/cudss/libcudss.so.0
fi
# run_sanitizers FILTER DIR: compute-sanitizer memcheck, racecheck and synccheck on the
# gpu_sanitize test cases matching FILTER, a log per tool in DIR.
run_sanitizers() {
  for tool in memcheck racecheck synccheck; do
    timeout 200 compute-sanitizer --tool $tool .gpu/tests/gpu_sanitize-* "$1" > "$2/sanitize-$tool.log" 2>&1
    echo "$tool rc=$?"; grep -E "ERROR SUMMARY|test result" "$2/sanitize-$tool.log" | head -3
  done
}
