#!/usr/bin/env bash
# On a GPU host: PyTorch problem files to a measured campaign, every step on this machine.
#
#   scripts/gpu-import.sh PROBLEMS [DIST]
#
# 1. `kernelskill import PROBLEMS --verify` on every GPU: each rendered reference against its
#    module (a reference that disagrees is left out of the campaign);
# 2. torch baselines of every imported task (its module, eager and torch.compile), one
#    tools/torch_baselines.py per GPU over its share of the tasks, merged into one file;
# 3. the campaign over the verified tasks with those baselines (BUDGET candidates per task,
#    WALL seconds; default config otherwise), and its table (scripts/results-table.py).
#
# 4. (STEPS with versus) the winners exported as a package and timed against torch in one
#    process per GPU, interleaved, ROUNDS rounds (tools/ks_export_check.py --versus-torch):
#    versus-table.md.
#
# STEPS=import,baselines,campaign picks steps (a later call resumes the campaign from OUT's
# copy when CAMPAIGN_DIR names a carried folder). Logs and results go to $OUT (the device
# tool's folder) or out/, eight files at most (the device tool brings back no more): the
# tasks as tasks.tgz, the bench trace in $WORK.
set -uo pipefail
cd "$(dirname "$0")/.."
problems=$(realpath "${1:?usage: gpu-import.sh PROBLEMS [DIST]}")
dist=$(realpath "${2:-dist}")
out=$(realpath -m "${OUT:-out}")
work=${WORK:-/tmp/ks-import}
steps=${STEPS:-import,baselines,campaign}
mkdir -p "$out" "$work"
export PATH=/usr/local/cuda/bin:$PATH KS_INCLUDE_DIR=$dist/include
ks=$dist/bin/kernelskill
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
ngpus=$(echo "$gpus" | tr ',' '\n' | wc -l)
tasks=$work/tasks
summary=()
step() { [[ ",$steps," == *",$1,"* ]]; }
now() { date +%s; }

if step import; then
  t0=$(now)
  rm -rf "$tasks"
  "$ks" import "$problems" --out "$tasks" --verify --devices "$gpus" >"$out/import.log" 2>&1
  rc=$?
  summary+=("| import --verify | rc=$rc | $(($(now) - t0)) s | $(grep -c '^verified  ' "$out/import.log") verified, $(grep -c '^not ' "$out/import.log") not |")
  tar czf "$out/tasks.tgz" -C "$work" tasks # one file: the device tool brings back 8 at most
fi

manifests=$(python3 - "$tasks/campaign.toml" <<'PY'
import os, sys, tomllib
doc = tomllib.load(open(sys.argv[1], "rb"))
print("\n".join(os.path.join(os.path.dirname(sys.argv[1]), t) for t in doc["campaign"]["tasks"]))
PY
)

if step baselines; then
  t0=$(now)
  i=0
  pids=()
  for device in ${gpus//,/ }; do
    share=$(echo "$manifests" | awk -v n="$ngpus" -v k="$i" 'NR % n == k')
    if [ -n "$share" ]; then
      # shellcheck disable=SC2086
      python3 tools/torch_baselines.py --kernelskill "$ks" --device "$device" \
        -o "$work/baselines-$device.json" $share >"$out/baselines-$device.log" 2>&1 &
      pids+=($!)
    fi
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  cat "$out"/baselines-*.log >"$out/baselines.log" && rm -f "$out"/baselines-*.log
  python3 - "$work/baselines.json" "$work"/baselines-*.json <<'PY'
import json, sys
merged = None
for path in sys.argv[2:]:
    doc = json.load(open(path))
    if merged is None:
        merged = doc
    else:
        merged["tasks"].update(doc["tasks"])
json.dump(merged, open(sys.argv[1], "w"), indent=2)
print(f"{len(merged['tasks'])} tasks timed")
PY
  cp "$work/baselines.json" "$out/torch-baselines-imported.json"
  summary+=("| torch baselines | | $(($(now) - t0)) s | $(python3 -c "import json;print(len(json.load(open('$work/baselines.json'))['tasks']))") tasks |")
fi

if step campaign; then
  campaign=${CAMPAIGN_DIR:-$work/campaign}
  # A fresh campaign and skill memory unless CAMPAIGN_DIR names one to resume: on a machine
  # kept warm, an earlier call's store would add its tasks to this one's results, and its
  # memory would steer this one's planning.
  [ -n "${CAMPAIGN_DIR:-}" ] || rm -rf "$campaign" "$campaign-memory"
  cfg=$work/run.toml
  python3 - "$cfg" "$campaign" "$work/baselines.json" "${BUDGET:-16}" "${WALL:-480}" $manifests <<'PY'
import json, sys
cfg, output, baselines, budget, wall, *tasks = sys.argv[1:]
with open(cfg, "w") as f:
    f.write('gpus = "all"\n\n[campaign]\n')
    f.write("tasks = [" + ", ".join(json.dumps(t) for t in tasks) + "]\n")
    f.write(f'output = "{output}"\nwall_time_s = {wall}\ncandidates_per_task = {budget}\n\n')
    f.write(f'[memory]\npath = "{output}-memory"\n\n[report]\ntorch_baselines = "{baselines}"\n')
PY
  t0=$(now)
  KS_BENCH_TRACE="$work/trace-campaign.jsonl" "$ks" run "$cfg" --progress 30 >"$out/campaign.log" 2>&1
  rc=$?
  summary+=("| campaign | rc=$rc | $(($(now) - t0)) s | BUDGET=${BUDGET:-16} WALL=${WALL:-480} on $ngpus GPUs |")
  cp "$campaign/results.json" "$out/results-imported.json" 2>/dev/null
  cp "$campaign/report.md" "$out/report-imported.md" 2>/dev/null
  python3 scripts/results-table.py "$campaign/results.json" >"$out/table-imported.md" 2>&1
  tail -n 25 "$out/table-imported.md"
fi

if step versus; then
  # The winners against torch in the same process, interleaved (tools/ks_export_check.py
  # --versus-torch): the campaign's "vs torch" columns compare times taken minutes apart.
  t0=$(now)
  campaign=${CAMPAIGN_DIR:-$work/campaign}
  pkg=$work/versus-package
  rm -rf "$pkg" "$work/versus-site" "$work"/versus-*.json
  {
    "$ks" export "$campaign" --out "$pkg" --name ks_versus --python python3 &&
      python3 -m pip install --no-build-isolation --no-deps --no-index \
        --target "$work/versus-site" "$pkg"
  } >"$out/versus.log" 2>&1
  rc=$?
  ops=$(python3 -c "import json,sys;print('\n'.join(json.load(open(sys.argv[1]))['ops']))" \
    "$pkg/ks_versus/export.json" 2>/dev/null)
  i=0
  pids=()
  for device in ${gpus//,/ }; do
    share=$(echo "$ops" | awk -v n="$ngpus" -v k="$i" 'NR % n == k' | paste -sd, -)
    if [ -n "$share" ] && [ $rc -eq 0 ]; then
      python3 tools/ks_export_check.py "$work/versus-site" --versus-torch "${ROUNDS:-5}" \
        --device "$device" --ops "$share" --kernelskill "$ks" \
        --json "$work/versus-$device.json" >>"$out/versus.log" 2>&1 &
      pids+=($!)
    fi
    i=$((i + 1))
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  shopt -s nullglob
  python3 - "$work"/versus-*.json >"$out/versus-table.md" 2>&1 <<'PY'
import json, sys
sys.path.insert(0, "tools")
import ks_export_check
rows, rounds = [], 0
if not sys.argv[1:]:
    sys.exit("no op was timed head-to-head: see versus.log")
for path in sys.argv[1:]:
    doc = json.load(open(path))
    rows += doc["ops"]
    rounds = doc["rounds"]
print(f"{doc['device']}, torch {doc['torch']}")
ks_export_check.print_versus(sorted(rows, key=lambda r: r["op"]), rounds)
PY
  tail -n 12 "$out/versus-table.md"
  summary+=("| versus torch | rc=$rc | $(($(now) - t0)) s | ROUNDS=${ROUNDS:-5} on $ngpus GPUs |")
fi

echo
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
echo "| step | rc | wall | what |"
echo "|---|---|---|---|"
printf '%s\n' "${summary[@]}"
