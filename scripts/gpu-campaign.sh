#!/usr/bin/env bash
# Runs the campaign engine on a GPU host from a carried install tree and prints a table last.
#
#   scripts/gpu-campaign.sh quickstart [DIST]  quickstart campaign; then a campaign killed
#                                              with SIGKILL mid-run and resumed to the end
#   scripts/gpu-campaign.sh kill [DIST]        only the kill -9 and resume part
#   scripts/gpu-campaign.sh starter [DIST]     the kernelbench-l1 suite with a bounded budget
#                                              (BUDGET candidates per task, WALL seconds, GPUS
#                                              '"all"' or '[0]'), beside torch baselines timed
#                                              first on the same machine (BASELINES=auto, the
#                                              default, when python3 has torch; =FILE reuses a
#                                              baselines file; =0 skips them)
#   scripts/gpu-campaign.sh guided [DIST]      the starter suite without profiles, then with the
#                                              default policy (fresh memories, GPU 0, BUDGET
#                                              and WALL): candidates each took per task
#   scripts/gpu-campaign.sh new-ops [DIST]     ops in neither suite, from manifests alone
#                                              (tests/gpu/new-ops/), BUDGET and WALL as above:
#                                              each best kernel's share of the roofline
#   scripts/gpu-campaign.sh scaling [DIST]     kernelbench-l1 on GPU 0 alone, then on all GPUs
#                                              (same warm compile cache): throughput ratio;
#                                              WARM=0 skips the cache warm-up run, REPEAT=N
#                                              measures N pairs and pools them, KEYS=
#                                              'SECTION.KEY=VALUE ...' sets config keys
#
# Without a GPU, the scheduling alone can be exercised with the scripted worker standing in as
# ks-bench-worker in a copy of DIST and tests/actors/fake_nvcc.sh as nvcc (KS_SCRIPTED_MODE=
# campaign KS_SCRIPTED_DEVICES=2 KS_SCRIPTED_JOB_MS=20 KS_SCRIPTED_BASE_MS=100 KS_NVCC=...):
# every job then takes the same time, unlike on a GPU.
#
# Logs, results.json, report.md and each run's bench-job trace (trace-LABEL.jsonl, one line per
# job: GPU, task, start and end) go to $OUT (the device tool's folder) or out/.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: gpu-campaign.sh quickstart|kill|starter|guided|new-ops|scaling [DIST]}
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
    # SECTION.KEY=VALUE sets a key the base file may lack, in its section.
    local key=${kv%%=*} value=${kv#*=} section=
    [[ $key == *.* ]] && { section=${key%%.*}; key=${key#*.}; }
    if grep -q "^$key = " "$file"; then
      sed -i "s|^$key = .*|$key = $value|" "$file"
    elif [ -n "$section" ]; then
      sed -i "/^\[$section\]/a $key = $value" "$file"
    fi
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
  # Torch baselines from this machine first (scripts/gpu-baselines.sh, 3-5 minutes for the
  # suite), so the table compares the best kernels with torch eager and torch.compile.
  baselines=()
  case ${BASELINES:-auto} in
  0|none) ;;
  auto)
    if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      t0=$(date +%s)
      OUT="$out" scripts/gpu-baselines.sh kernelbench-l1 "$dist" 2>&1 | tee "$out/baselines.txt"
      summary+=("| torch baselines | $(tail -1 "$out/baselines.txt" | cut -c1-60) | $(( $(date +%s) - t0 )) s |")
      [ -f "$out/torch-baselines-kernelbench-l1.json" ] && baselines=(--baselines "$out/torch-baselines-kernelbench-l1.json")
    else
      summary+=("| torch baselines | skipped: python3 has no torch with CUDA | |")
    fi
    ;;
  *) baselines=(--baselines "$(realpath "$BASELINES")") ;;
  esac
  run_campaign starter "$(config l1 kernelbench-l1 "$work/l1" "${GPUS:-\"all\"}" candidates_per_task=${BUDGET:-16} wall_time_s=${WALL:-420})" "${baselines[@]}"
  cp "$work/l1/report.md" "$out/starter-report.md"; cp "$work/l1/results.json" "$out/starter-results.json"
  scripts/results-table.py "$work/l1/results.json" | tee "$out/starter-table.md"
  ;;
guided)
  # The starter suite twice from fresh skill memories: without profiles (the diagnosis from
  # timing alone) and with the default policy (counters of each parent before its expansion);
  # per task, the candidates each made before one came within 3% of the better best of the two.
  for policy in none parents; do
    rm -rf "$work/guided-$policy" "$work/guided-$policy-memory"
    cfg=$(config "guided-$policy" kernelbench-l1 "$work/guided-$policy" '[0]' \
      candidates_per_task=${BUDGET:-24} wall_time_s=${WALL:-240})
    sed -i "/^\[search\]/a profile = \"$policy\"" "$cfg"
    run_campaign "guided-$policy" "$cfg"
    cp "$work/guided-$policy/results.json" "$out/guided-$policy-results.json"
  done
  python3 - "$work/guided-none/results.json" "$work/guided-parents/results.json" <<'PY' | tee "$out/guided-table.md"
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:3]]

def timed(task):
    nodes = sorted((n for n in task["nodes"] if n["id"] != 0), key=lambda n: n["id"])
    return [(n.get("timing") or {}).get("median_ms") for n in nodes]

def best(task):
    times = [ms for ms in timed(task) if ms] + [task["reference"]["median_ms"]]
    return min(times)

def reach(task, target):
    if task["reference"]["median_ms"] <= target * 1.03:
        return 0
    for count, ms in enumerate(timed(task), start=1):
        if ms is not None and ms <= target * 1.03:
            return count
    return None

by_name = [{t["name"]: t for t in r["tasks"]} for r in runs]
print("| task | best ms, no profiles | best ms, profiled parents | candidates to within 3%: no profiles | profiled |")
print("|---|---|---|---|---|")
totals = [0, 0]
for name in sorted(by_name[0]):
    a, b = by_name[0][name], by_name[1].get(name)
    if b is None:
        continue
    target = min(best(a), best(b))
    counts = [reach(a, target), reach(b, target)]
    cells = []
    for i, c in enumerate(counts):
        if c is None:
            cells.append(f"not reached ({len(timed((a, b)[i]))})")
            totals[i] += len(timed((a, b)[i]))
        else:
            cells.append(str(c))
            totals[i] += c
    print(f"| {name} | {best(a):.4f} | {best(b):.4f} | {cells[0]} | {cells[1]} |")
print(f"| **total** | | | **{totals[0]}** | **{totals[1]}** |")
PY
  ;;
new-ops)
  # Ops in neither suite, from manifests alone (tests/gpu/new-ops/): each best kernel's share
  # of the roofline.
  rm -rf "$work/new-ops"
  run_campaign new-ops "$(config new-ops kernelbench-l1 "$work/new-ops" '[0]' \
    "tasks=[\"$PWD/tests/gpu/new-ops/*.toml\"]" candidates_per_task=${BUDGET:-12} wall_time_s=${WALL:-240})"
  cp "$work/new-ops/results.json" "$out/new-ops-results.json"
  scripts/results-table.py "$work/new-ops/results.json" | tee "$out/new-ops-table.md"
  ;;
scaling)
  rm -rf "$work"/s0 "$work"/s1-* "$work"/s2-*
  cache=${CACHE:-$work/scaling-cache}  # CACHE= an existing compile cache (e.g. carried) to reuse
  # TASKS='["glob", ...]' replaces the suite (relative globs are taken from the repo root).
  extra=()
  [ -n "${TASKS:-}" ] && extra=("tasks=${TASKS//\"tasks\//\"$PWD/tasks/}")
  # KEYS='SECTION.KEY=VALUE ...' sets config keys of every run (e.g. fixed-size trees).
  read -r -a keys <<< "${KEYS:-}"
  extra+=("${keys[@]}")
  # The first run only fills the compile cache, so the measured runs compile nothing
  # (WARM=0 skips it when an earlier run filled the cache).
  if [ "${WARM:-1}" != 0 ]; then
    run_campaign warm-cache "$(config s0 kernelbench-l1 "$work/s0" '[0]' candidates_per_task=${BUDGET:-12} wall_time_s=300 "${extra[@]}")" --cache-dir "$cache"
  fi
  # REPEAT=N pairs (GPU 0 alone, then all GPUs, back to back): the trees differ from run to run
  # (the judge rests on real timings), so one pair is a noisy estimate; the pooled ratio is
  # total candidates over total wall, both ways.
  walls=()
  for pair in $(seq 1 "${REPEAT:-1}"); do
    run_campaign "one-gpu-$pair" "$(config "s1-$pair" kernelbench-l1 "$work/s1-$pair" '[0]' candidates_per_task=${BUDGET:-12} wall_time_s=300 "${extra[@]}")" --cache-dir "$cache"
    walls+=("$work/s1-$pair=$last_wall=$out/one-gpu-$pair.log")
    run_campaign "all-gpus-$pair" "$(config "s2-$pair" kernelbench-l1 "$work/s2-$pair" '"all"' candidates_per_task=${BUDGET:-12} wall_time_s=300 "${extra[@]}")" --cache-dir "$cache"
    walls+=("$work/s2-$pair=$last_wall=$out/all-gpus-$pair.log")
  done
  # Throughput: candidates verified and timed (every node but the reference with a timing) per
  # second of the script's wall time for the run, which includes start-up and the finals.
  while IFS= read -r line; do summary+=("| $line | | |"); done < <(python3 - "${walls[@]}" <<'PY'
import json, re, sys
def timed(path):
    r = json.load(open(path + "/results.json"))
    return sum(1 for t in r["tasks"] for n in t["nodes"] if n["id"] != 0 and n.get("timing"))
def campaign_wall(log):
    # The campaign's own wall ("wall time: 17.6 s" in its summary): without process start-up,
    # worker start and calibration, and shutdown.
    m = re.search(r"^wall time: ([0-9.]+) s", open(log).read(), re.M)
    return float(m.group(1)) if m else float("nan")
def ratio(one, w1, both, w2):
    return f"{(both / w2) / (one / w1):.2f}x" if one > 0 and w2 > 0 else "n/a (no candidate on one GPU)"
runs = [(p, float(w), campaign_wall(log)) for p, w, log in (a.split("=") for a in sys.argv[1:])]
totals = [0, 0.0, 0, 0.0, 0.0, 0.0]
for (p1, w1, c1), (p2, w2, c2) in zip(runs[0::2], runs[1::2]):
    one, both = timed(p1), timed(p2)
    totals = [a + b for a, b in zip(totals, [one, w1, both, w2, c1, c2])]
    print(f"pair {p1.rsplit('-', 1)[1]}: one GPU {one} candidates in {w1:.1f} s ({one / w1:.2f}/s); all GPUs {both} in {w2:.1f} s ({both / w2:.2f}/s); throughput ratio {ratio(one, w1, both, w2)}, wall ratio {w1 / w2:.2f}x, campaign-wall ratio {c1 / c2:.2f}x")
if len(runs) > 2:
    one, w1, both, w2, c1, c2 = totals
    print(f"pooled over {len(runs) // 2} pairs: one GPU {one} in {w1:.1f} s ({one / w1:.2f}/s); all GPUs {both} in {w2:.1f} s ({both / w2:.2f}/s); throughput ratio {ratio(one, w1, both, w2)}, wall ratio {w1 / w2:.2f}x, campaign-wall ratio {c1 / c2:.2f}x")
PY
)
  ;;
esac

echo
echo "=== gpu-campaign $mode"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem --format=csv,noheader
printf '| step | result | wall |\n|---|---|---|\n'
printf '%s\n' "${summary[@]}"
for f in "$out"/*.log; do echo "--- $(basename "$f")"; sed -n '/^[A-Za-z].*summary\|^task\|^|/,$p' "$f" | tail -25; done
