#!/usr/bin/env bash
# Torch baselines beside a campaign's results, through the real binary (the scripted worker in
# campaign mode stands in for the GPU, tests/actors/fake_nvcc.sh for nvcc):
#   - `task show --json` gives the torch expressions the families derive (what
#     tools/torch_baselines.py times);
#   - a config's [report] torch_baselines puts "vs eager" and "vs compile" columns and a
#     geomean row in the final table, report.md and `status`, the speedups and geomeans in
#     results.json; a task absent from the file shows "-";
#   - a file of another GPU is shown, flagged: a warning at the start and under the table;
#   - a broken file stops the run before it starts (exit 2, FILE:LINE:COL); --baselines
#     naming no file is a usage error (exit 1); a run without baselines drops the columns.
# Usage: torch_baselines.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: torch_baselines.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: torch_baselines.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 125; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=1 KS_SCRIPTED_STATE_DIR="$tmp/worker-state"
export KS_SCRIPTED_JOB_MS=0
q="$src/tasks/quickstart"

# The engine's reading of a suite, for the tool.
"$ks" task show --json "$q" >show.json 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "task show --json: exit $rc: $(cat err.txt)"
python3 - show.json <<'PY' || fail "task show --json: $(head -c 600 show.json)"
import json, sys
tasks = {t["name"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
assert len(tasks) == 8, sorted(tasks)
assert tasks["relu"]["torch"], tasks["relu"]
assert tasks["relu"]["inputs"][0]["dtype"] == "f32" and tasks["relu"]["inputs"][0]["init"]
assert all(t["torch"] for t in tasks.values()), [n for n, t in tasks.items() if not t["torch"]]
PY
"$ks" task show "$q/47_sum.toml" >show.txt 2>err.txt || fail "task show: $(cat err.txt)"
grep -q '^sum (reduce, ' show.txt || fail "task show: no heading line: $(cat show.txt)"
grep -q '^  torch:     torch.sum' show.txt || fail "task show: no torch line: $(cat show.txt)"

baselines() {  # baselines FILE DEVICE
  cat >"$1" <<JSON
{"format": "kernelskill-torch-baselines", "version": 1, "device": "$2",
 "torch_version": "2.11.0", "date": "2026-11-26T00:00:00Z", "method": {"compile_mode": "default"},
 "tasks": {
   "relu": {"eager": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.1, "trials": 10},
            "compile": {"median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "trials": 10}}}}
JSON
}
mkdir -p b
baselines b/same.json "Scripted GPU"
baselines b/other.json "NVIDIA H100 80GB HBM3"
printf '{"format": "kernelskill-torch-baselines",\n "tasks": {,}}\n' >b/broken.json

cat >campaign.toml <<TOML
gpus = [0]
[campaign]
tasks = ["$q/19_relu.toml", "$q/47_sum.toml"]
output = "out"
candidates_per_task = 4
[search]
branches = 2
depth = 2
stop_patience = 1
finalists = 2
[bench]
trials = 1
warmup_ms = 0
max_timing_ms = 1
[report]
torch_baselines = "b/same.json"
TOML

timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "campaign with baselines: exit $rc: $(cat out.txt err.txt)"
grep -qE '^task +reference +best +speedup +vs eager +vs compile +roofline' out.txt \
  || fail "table: no vs eager / vs compile columns: $(cat out.txt)"
grep -qE '^relu .*[0-9.]+x +[0-9.]+x +[0-9.]+x ' out.txt || fail "table: relu has no torch ratios: $(cat out.txt)"
grep -qE '^sum .*[0-9.]+x +- +- ' out.txt || fail "table: sum (absent from the file) is not '-': $(cat out.txt)"
grep -qE '^geomean +[0-9.]+x +[0-9.]+x +[0-9.]+x' out.txt || fail "table: no geomean row: $(cat out.txt)"
grep -q "vs eager, vs compile: torch 2.11.0's eager and torch.compile (mode default)" out.txt \
  || fail "table: does not say what vs eager is measured against: $(cat out.txt)"
grep -q "warning" out.txt err.txt && fail "same GPU: a warning: $(cat out.txt err.txt)"
[ -f out/torch-baselines.json ] || fail "no checked copy out/torch-baselines.json"
python3 - out/results.json <<'PY' || fail "results.json: torch fields: $(head -c 800 out/results.json)"
import json, sys
r = json.load(open(sys.argv[1]))
tasks = {t["name"]: t for t in r["tasks"]}
relu, s = tasks["relu"], tasks["sum"]
best = relu["winner"]["median_ms"]
assert relu["torch_eager_ms"] == 2.0 and relu["torch_compile_ms"] == 1.0, relu
assert abs(relu["speedup_vs_eager"] - 2.0 / best) < 1e-9 * (2.0 / best), relu["speedup_vs_eager"]
assert s["speedup_vs_eager"] is None and s["torch_note"] == "not in the baselines file", s
g = r["geomeans"]
assert abs(g["speedup_vs_eager"] - relu["speedup_vs_eager"]) < 1e-9 and g["tasks_vs_eager"] == 1, g
assert r["torch_baselines"]["device_matches"] is True, r["torch_baselines"]
assert r["torch_baselines"]["file"].endswith("b/same.json"), r["torch_baselines"]
PY
grep -q '| task | state | reference | best | speedup | vs eager | vs compile | roofline | nodes |' out/report.md \
  || fail "report.md: no torch columns: $(head -20 out/report.md)"
grep -q '^| \*\*geomean\*\* |' out/report.md || fail "report.md: no geomean row"
"$ks" status out >s.out 2>s.err || fail "status: $(cat s.err)"
grep -q 'vs eager vs compile' s.out || fail "status: no torch columns: $(cat s.out)"

# Another GPU's file: shown, flagged at the start and under the table.
rm -rf out worker-state
timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 --baselines b/other.json \
  >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "campaign with another GPU's baselines: exit $rc: $(cat err.txt)"
grep -q 'warning: the torch baselines in .*other.json were measured on "NVIDIA H100 80GB HBM3", this campaign runs on "Scripted GPU"' err.txt \
  || fail "another GPU: no warning at the start: $(cat err.txt)"
grep -q '^warning: the torch baselines' out.txt || fail "another GPU: no warning under the table: $(cat out.txt)"
grep -qE '^relu .*[0-9.]+x +[0-9.]+x +[0-9.]+x ' out.txt || fail "another GPU: the ratios are not shown: $(cat out.txt)"
grep -q '"device_matches": false' out/results.json || fail "another GPU: results.json does not flag it"

# A broken file stops the run before anything starts; a missing --baselines is a usage error.
timeout 60 "$ks" run campaign.toml --worker "$worker" --baselines b/broken.json >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 2 ] || fail "broken baselines: exit $rc, wanted 2: $(cat err.txt)"
grep -qE 'broken\.json:2:[0-9]+: not valid JSON' err.txt || fail "broken baselines: no FILE:LINE:COL: $(cat err.txt)"
timeout 60 "$ks" run campaign.toml --worker "$worker" --baselines b/none.json >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 1 ] || fail "missing --baselines: exit $rc, wanted 1: $(cat err.txt)"
grep -q 'none.json: no such file' err.txt || fail "missing --baselines: $(cat err.txt)"

# Without baselines: no torch columns, the copy is gone, the geomean row stays.
sed -i '/^\[report\]/,$d' campaign.toml
timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "campaign without baselines: exit $rc: $(cat err.txt)"
grep -q 'vs eager' out.txt && fail "without baselines: torch columns: $(cat out.txt)"
grep -qE '^geomean +[0-9.]+x' out.txt || fail "without baselines: no geomean row: $(cat out.txt)"
[ -f out/torch-baselines.json ] && fail "without baselines: the copy was kept"

if [ "$failures" -ne 0 ]; then
  echo "torch_baselines.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "torch_baselines.sh: all checks passed"
