#!/usr/bin/env bash
# Runs every GPU test and benchmark in one call, on a GPU host, from a carried install tree
# (build here with scripts/build.sh; carry dist/). Prints a short table last.
#
#   scripts/gpu-check.sh [DIST]        DIST defaults to dist/
#
# Logs and the full benchmark output go to $OUT (the device tool's folder) or out/.
set -uo pipefail
cd "$(dirname "$0")/.."
dist=$(realpath "${1:-dist}")
out=${OUT:-out}
mkdir -p "$out"
export KS_SOURCE_DIR=$PWD KS_BIN_DIR=$dist/bin KS_INCLUDE_DIR=$dist/include
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ks-cache}
export PATH=/usr/local/cuda/bin:$PATH

declare -a names results
step() {  # step NAME TIMEOUT COMMAND...
  local name=$1 limit=$2; shift 2
  echo "=== $name"
  local t0=$SECONDS
  timeout "$limit" "$@" > >(tee "$out/$name.log") 2>&1
  local rc=$?
  names+=("$name"); results+=("rc=$rc $((SECONDS - t0))s")
  return 0
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$out/nvidia-smi.txt"
step devices 120 "$dist/bin/kernelskill" devices
step gpu-tests 900 "$dist/bin/ks_gpu_tests" --durations yes
step eval-good 300 "$dist/bin/kernelskill" eval tasks/quickstart/19_relu.toml tests/gpu/faulty/relu_good.cu
step eval-tf32 300 "$dist/bin/kernelskill" eval tasks/quickstart/1_matmul.toml tests/gpu/faulty/matmul_tf32.cu
step suite-bench 1500 "$dist/bin/ks-suite-bench" --suite tasks/quickstart --suite tasks/kernelbench-l1 \
  --one-ms tests/gpu/relu_1ms.toml --include "$dist/include"

echo
echo "=== benchmark tables"
sed -n '/^### Device/,$p' "$out/suite-bench.log"
echo
echo "=== gpu-check summary"
printf '| step | result |\n|---|---|\n'
for i in "${!names[@]}"; do printf '| %s | %s |\n' "${names[$i]}" "${results[$i]}"; done
grep -E "^(test cases|All tests)" "$out/gpu-tests.log" || true
