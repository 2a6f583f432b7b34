#!/usr/bin/env bash
# Runs every GPU test and benchmark in one call, on a GPU host, from a carried install tree
# (build here with scripts/build.sh; carry dist/). Prints a short table last.
#
#   scripts/gpu-check.sh [DIST]        DIST defaults to dist/
#   BEFORE=OLD_DIST scripts/gpu-check.sh [DIST]
#                                      also times the suites with an older install tree first,
#                                      and prints the references' medians before and after
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
step() {  # step NAME TIMEOUT EXPECTED_RC COMMAND...
  local name=$1 limit=$2 expected=$3; shift 3
  echo "=== $name"
  local t0=$SECONDS
  timeout "$limit" "$@" > >(tee "$out/$name.log") 2>&1
  local rc=$?
  local verdict="as expected"
  [ "$rc" = "$expected" ] || verdict="EXPECTED $expected"
  names+=("$name"); results+=("rc=$rc $((SECONDS - t0))s | $verdict")
  return 0
}
# bubblewrap for the sandbox steps: the host's, or one carried beside kernelskill.
have_bwrap=0
{ [ -x "$dist/bin/bwrap" ] || command -v bwrap >/dev/null; } && have_bwrap=1

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv | tee "$out/nvidia-smi.txt"
step devices 120 0 "$dist/bin/kernelskill" devices
step gpu-tests 900 0 "$dist/bin/ks_gpu_tests" --durations yes
step eval-good 300 0 "$dist/bin/kernelskill" eval tasks/quickstart/19_relu.toml tests/gpu/faulty/relu_good.cu
step eval-tf32 300 16 "$dist/bin/kernelskill" eval tasks/quickstart/1_matmul.toml tests/gpu/faulty/matmul_tf32.cu
# The worker's boundary: the probe returns 91 (it could write /etc) unsandboxed, never 90 (it
# saw the key); inside bubblewrap it passes. The stream audit must work in the sandbox too.
step probe-boundary 300 13 env OPENAI_API_KEY=sk-probe "$dist/bin/kernelskill" eval \
  tasks/quickstart/19_relu.toml tests/gpu/boundary/relu_probe.cu
if [ "$have_bwrap" = 1 ]; then
  step probe-sandbox 300 0 env OPENAI_API_KEY=sk-probe "$dist/bin/kernelskill" eval --sandbox \
    tasks/quickstart/19_relu.toml tests/gpu/boundary/relu_probe.cu
  step eval-good-sandbox 300 0 "$dist/bin/kernelskill" eval --sandbox \
    tasks/quickstart/19_relu.toml tests/gpu/faulty/relu_good.cu
  step side-work-sandbox 300 18 "$dist/bin/kernelskill" eval --sandbox \
    tasks/quickstart/19_relu.toml tests/gpu/hostile/relu_side_work.cu
fi
# A GPU made noisy on purpose (issue 22): ks-gpu-noise competes for GPU 0 in bursts while a
# one-minute campaign runs there; the campaign must report the unstable GPU within a minute,
# carry the warning in its results, and end no task with a winner slower than its reference
# (re-timed once the noise stops). About 100 s.
step noise-check 240 0 scripts/gpu-noise-check.sh "$dist"
# Our own PyTorch problem files imported and every rendered reference checked against its
# module on the GPU (the concat family, matmul and conv epilogues among them): the sort is
# refused (exit 2), the other 20 must verify. About a minute where torch is installed.
if python3 -c 'import torch' 2>/dev/null; then
  step import-verify 300 0 bash -c '"$1" import tests/tools/import_problems --verify \
    --out "$2/import-verify" > "$2/import-verify.txt" 2>&1; rc=$?; cat "$2/import-verify.txt"
    [ "$rc" -eq 2 ] && [ "$(grep -c "^verified  " "$2/import-verify.txt")" -eq 20 ]' \
    _ "$dist/bin/kernelskill" "$out"
fi
if [ -n "${BEFORE:-}" ]; then
  before=$(realpath "$BEFORE")
  step suite-bench-before 1500 0 "$before/bin/ks-suite-bench" --suite tasks/quickstart \
    --suite tasks/kernelbench-l1 --one-ms tests/gpu/relu_1ms.toml --include "$before/include"
fi
step suite-bench 1500 0 "$dist/bin/ks-suite-bench" --suite tasks/quickstart --suite tasks/kernelbench-l1 \
  --one-ms tests/gpu/relu_1ms.toml --include "$dist/include"

echo
echo "=== benchmark tables"
sed -n '/^### Device/,$p' "$out/suite-bench.log"
if [ -n "${BEFORE:-}" ]; then
  echo
  echo "=== references before and after (median ms; timing job wall s)"
  python3 scripts/compare-suite-bench.py "$out/suite-bench-before.log" "$out/suite-bench.log"
fi

echo
echo "=== gpu-check summary"
printf '| step | result | verdict |\n|---|---|---|\n'
for i in "${!names[@]}"; do printf '| %s | %s |\n' "${names[$i]}" "${results[$i]}"; done
grep -E "^(test cases|All tests)" "$out/gpu-tests.log" || true
grep -E "^noise-check: " "$out/noise-check.log" || true
