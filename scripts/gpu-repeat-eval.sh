#!/usr/bin/env bash
# Times candidates of one task in ROUNDS separate `kernelskill eval` runs, interleaved (A B C A
# B C ...), and prints each run's median with the GPU's clocks and temperature after it: how
# much a timing moves from one bench job (one worker, fresh buffers) to the next, which is what
# a campaign's finals compare.
#
#   ROUNDS=4 scripts/gpu-repeat-eval.sh TASK.toml DIST CANDIDATE.cu...
set -uo pipefail
cd "$(dirname "$0")/.."
task=${1:?usage: gpu-repeat-eval.sh TASK.toml DIST CANDIDATE.cu...}
dist=$(realpath "${2:?usage: gpu-repeat-eval.sh TASK.toml DIST CANDIDATE.cu...}")
shift 2
export PATH=/usr/local/cuda/bin:$PATH KS_INCLUDE_DIR=$dist/include
rows=()
for ((round = 1; round <= ${ROUNDS:-4}; ++round)); do
  for cand in "$@"; do
    json=$("$dist/bin/kernelskill" eval --json --trials 1 "$task" "$cand" 2>/dev/null)
    smi=$(nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader 2>/dev/null | head -1)
    line=$(python3 -c '
import json, sys
try:
    r = json.loads(sys.argv[1])
    t, ref = r["timing"]["candidate"], r["timing"]["reference"]
    print("%.4f | %.4f | %.4f | %.4f" % (t["median_ms"], t["p10_ms"], t["p90_ms"], ref["median_ms"]))
except Exception:
    print("- | - | - | - (%s)" % sys.argv[1][:300].replace("\n", " "))' "$json")
    rows+=("| $round | $(basename "$cand") | $line | $smi |")
  done
done
echo "| round | candidate | median ms | p10 ms | p90 ms | reference median ms | sm MHz, mem MHz, temp C, power |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
