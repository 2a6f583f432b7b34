#!/usr/bin/env bash
# Runs the campaign engine on a GPU host from a carried install tree and prints a table last.
#
#   scripts/gpu-campaign.sh quickstart [DIST]  quickstart campaign; then a campaign killed
#                                              with SIGKILL mid-run and resumed to the end
#   scripts/gpu-campaign.sh kill [DIST]        only the kill -9 and resume part
#   scripts/gpu-campaign.sh starter [DIST]     the kernelbench-l1 suite with a bounded budget
#   scripts/gpu-campaign.sh scaling [DIST]     kernelbench-l1 on GPU 0 alone, then on all GPUs
#                                              (same warm compile cache): throughput ratio;
#                                              WARM=0 skips the cache warm-up run
#
# Logs, results.json, report.md and each run's bench-job trace (trace-LABEL.jsonl, one line per
# job: GPU, task, start and end) go to $OUT (the device tool's folder) or out/.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: gpu-campaign.sh quickstart|starter|scaling [DIST]}
dist=$(realpath "${2:-dist}")
out=$(realpath -m "${OUT:-out}")
mkdir -p "$out"
work=/tmp/ks-campaign
mkdir -p "$work"
export PATH=/usr/local/cuda/bin:$PATH KS_INCLUDE_DIR=$dist/include
ks=$dist/bin/kernelskill

# config NAME BASE OUTPUT GPUS [KEY=VALUE...]: a copy of configs/BASE.toml with its output
# folder, GPUs and budget keys replaced; task globs are made absolute.
config() {
  local name=$1 base=$2 output=$3 gpus=$4; shift 4
  local file=$work/$name.toml
  sed -e "s|^output = .*|output = \"$output\"|" \
      -e "s|^path = .*|path = \"$output-memory\"|" \
      -e "s|^gpus = .*|gpus = $gpus|" \
      -e "s|\"\.\./tasks/|\"$PWD/tasks/|" "configs/$base.toml" > "$file"
  for kv in "$@"; do
    local key=${kv%%=*} value=${kv#*=}
    sed -i "s|^$key = .*|$key = $value|" "$file"
  done
  echo "$file"
}

# nodes OUTPUT: "<total nodes> <final nodes>" from results.json
nodes() {
  python3 - "$1/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
final = {"compile_failed", "failed", "crashed", "timed_out", "rejected", "accepted"}
n = [x for t in r["tasks"] for x in t["nodes"]]
print(len(n), sum(1 for x in n if x["status"] in final or (x["status"] == "verified" and x.get("disposition") == "incorrect")))
PY
}

summary=()
run_campaign() {  # run_campaign LABEL CONFIG [ARGS...]
  local label=$1 cfg=$2; shift 2
  local t0; t0=$(date +%s.%N)
  KS_BENCH_TRACE="$out/trace-$label.jsonl" "$ks" run "$cfg" --progress 10 "$@" > >(tee "$out/$label.log") 2> >(tee "$out/$label.err" >&2)
  local rc=$?
  last_wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
  summary+=("| $label | rc=$rc | $last_wall s |")
  return $rc
}

case $mode in
quickstart)
  rm -rf "$work/qs"
  run_campaign quickstart "$(config qs quickstart "$work/qs" '"all"')"
  cp "$work/qs/report.md" "$out/quickstart-report.md"; cp "$work/qs/results.json" "$out/quickstart-results.json"
  read -r qs_total qs_final < <(nodes "$work/qs")
  summary+=("| quickstart nodes: $qs_total | | |")
  ;;&
quickstart|kill)
  # A campaign killed with SIGKILL mid-run, then resumed: no finished node may be lost.
  rm -rf "$work/qs-kill"
  cfg=$(config qs-kill quickstart "$work/qs-kill" '"all"')
  "$ks" run "$cfg" --progress 5 > "$out/kill-1.log" 2> "$out/kill-1.err" &
  pid=$!
  sleep "${KILL_AFTER:-40}"
  if kill -9 "$pid" 2>/dev/null; then echo "killed the campaign with SIGKILL"; else echo "the campaign ended before the kill"; fi
  wait "$pid" 2>/dev/null
  # The store is the truth at the kill: export it before the resume changes anything.
  rm -rf "$work/snapshot"
  "$ks" status "$work/qs-kill" --export "$work/snapshot" > "$out/kill-status.txt" 2>&1
  cp "$work/snapshot/results.json" "$work/before-kill.json"
  run_campaign resumed "$cfg"
  python3 - "$work/before-kill.json" "$work/qs-kill/results.json" <<'PY' | tee "$out/kill-check.txt"
import json, sys
before, after = (json.load(open(p)) for p in sys.argv[1:3])
final = {"compile_failed", "failed", "crashed", "timed_out", "rejected", "accepted"}
key = lambda t, n: (t["name"], n["id"])
after_nodes = {key(t, n): n for t in after["tasks"] for n in t["nodes"]}
done = [(key(t, n), n) for t in before["tasks"] for n in t["nodes"] if n["status"] in final]
lost = [k for k, n in done if k not in after_nodes]
changed = [k for k, n in done if k in after_nodes and
           {f: v for f, v in after_nodes[k].items() if f != "expansion_state"} !=
           {f: v for f, v in n.items() if f != "expansion_state"}]
print(f"finished nodes in the snapshot taken at the kill: {len(done)}; lost after resume: {len(lost)}; changed: {len(changed)}")
print(f"nodes after resume: {len(after_nodes)}")
PY
  read -r kill_total kill_final < <(nodes "$work/qs-kill")
  summary+=("| killed after ${KILL_AFTER:-40} s, then resumed: $kill_total nodes, $(head -1 "$out/kill-check.txt") | | |")
  ;;
starter)
  rm -rf "$work/l1"
  run_campaign starter "$(config l1 kernelbench-l1 "$work/l1" '"all"' candidates_per_task=${BUDGET:-16} wall_time_s=420)"
  cp "$work/l1/report.md" "$out/starter-report.md"; cp "$work/l1/results.json" "$out/starter-results.json"
  ;;
scaling)
  rm -rf "$work/s1" "$work/s2" "$work/s0"
  cache=${CACHE:-$work/scaling-cache}  # CACHE= an existing compile cache (e.g. carried) to reuse
  # TASKS='["glob", ...]' replaces the suite (relative globs are taken from the repo root).
  extra=()
  [ -n "${TASKS:-}" ] && extra=("tasks=${TASKS//\"tasks\//\"$PWD/tasks/}")
  # The first run only fills the compile cache, so both measured runs compile nothing
  # (WARM=0 skips it when an earlier run in this call filled the cache).
  if [ "${WARM:-1}" != 0 ]; then
    run_campaign warm-cache "$(config s0 kernelbench-l1 "$work/s0" '[0]' candidates_per_task=${BUDGET:-12} wall_time_s=300 "${extra[@]}")" --cache-dir "$cache"
  fi
  run_campaign one-gpu "$(config s1 kernelbench-l1 "$work/s1" '[0]' candidates_per_task=${BUDGET:-12} wall_time_s=300 "${extra[@]}")" --cache-dir "$cache"
  one_wall=$last_wall
  run_campaign all-gpus "$(config s2 kernelbench-l1 "$work/s2" '"all"' candidates_per_task=${BUDGET:-12} wall_time_s=300 "${extra[@]}")" --cache-dir "$cache"
  all_wall=$last_wall
  # Throughput: candidates verified and timed (every node but the reference with a timing) per
  # second of the campaign's wall time, which includes its finals.
  ratio=$(python3 - "$work/s1/results.json" "$work/s2/results.json" "$one_wall" "$all_wall" <<'PY'
import json, sys
def timed(path):
    r = json.load(open(path))
    return sum(1 for t in r["tasks"] for n in t["nodes"] if n["id"] != 0 and n.get("timing"))
one, both = timed(sys.argv[1]), timed(sys.argv[2])
w1, w2 = float(sys.argv[3]), float(sys.argv[4])
print(f"one GPU {one} candidates in {w1:.1f} s ({one / w1:.2f}/s); all GPUs {both} in {w2:.1f} s ({both / w2:.2f}/s); throughput ratio {(both / w2) / (one / w1):.2f}x")
PY
)
  summary+=("| $ratio | | |")
  ;;
esac

echo
echo "=== gpu-campaign $mode"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem --format=csv,noheader
printf '| step | result | wall |\n|---|---|---|\n'
printf '%s\n' "${summary[@]}"
for f in "$out"/*.log; do echo "--- $(basename "$f")"; sed -n '/^[A-Za-z].*summary\|^task\|^|/,$p' "$f" | tail -25; done
