#!/usr/bin/env bash
# Times each task's torch expression, eagerly and under torch.compile, on this GPU host with the
# bench worker's method (tools/torch_baselines.py), one baselines file per suite:
#
#   scripts/gpu-baselines.sh [SUITE...] [DIST]
#
# SUITE: a folder of tasks/ (kernelbench-l1, quickstart, families) or a path to a suite folder
# or manifest; default kernelbench-l1. DIST: the install tree whose bin/kernelskill reads the
# manifests (a family's torch expression is derived by the engine); default dist. Writes
# $OUT/torch-baselines-<suite>.json (the device tool's folder, else out/), which
# `kernelskill run CONFIG --baselines FILE` or `[report] torch_baselines` puts beside the
# results. Needs python3 with torch and a GPU; about 20-40 s per task of kernelbench-l1, most
# of it torch.compile's first compile of each op.
#
# Environment: DEVICE=N (CUDA device, default 0), TORCH_ARGS="--compile-mode max-autotune ..."
# (more options of the tool).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${OUT:-out}")
mkdir -p "$out"

suites=()
dist=dist
for arg in "$@"; do
  if [ -x "$arg/bin/kernelskill" ]; then
    dist=$arg
  elif [ -d "tasks/$arg" ]; then
    suites+=("tasks/$arg")
  elif [ -e "$arg" ]; then
    suites+=("$arg")
  else
    echo "gpu-baselines.sh: '$arg' is neither a suite (tasks/$arg, or a path) nor an install tree (no $arg/bin/kernelskill)" >&2
    exit 1
  fi
done
[ ${#suites[@]} -eq 0 ] && suites=(tasks/kernelbench-l1)
dist=$(realpath "$dist")
[ -x "$dist/bin/kernelskill" ] || { echo "gpu-baselines.sh: no $dist/bin/kernelskill (build and install first: scripts/build.sh)" >&2; exit 1; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null \
  || { echo "gpu-baselines.sh: python3 has no torch with CUDA here" >&2; exit 3; }

rc=0
for suite in "${suites[@]}"; do
  name=$(basename "${suite%.toml}")
  file="$out/torch-baselines-$name.json"
  echo "=== torch baselines of $suite -> $file"
  # shellcheck disable=SC2086 # TORCH_ARGS is a list of options
  python3 tools/torch_baselines.py --kernelskill "$dist/bin/kernelskill" --device "${DEVICE:-0}" \
    ${TORCH_ARGS:-} "$suite" -o "$file" || rc=$?
  [ -f "$file" ] && python3 - "$file" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"{doc['device']}, torch {doc['torch_version']}, compile mode {doc['method']['compile_mode']}, {doc['date']}")
print("| task | eager ms (p10-p90) | compile ms (p10-p90) | max abs eager - compile |")
print("|---|---|---|---|")
def cell(m):
    if not m:
        return "-"
    if "error" in m:
        return "error: " + m["error"][:60]
    return f"{m['median_ms']:.3f} ({m['p10_ms']:.3f}-{m['p90_ms']:.3f}, {m['trials']})"
for name, t in doc["tasks"].items():
    if "error" in t:
        print(f"| {name} | error: {t['error'][:80]} | | |")
    else:
        print(f"| {name} | {cell(t.get('eager'))} | {cell(t.get('compile'))} | {t.get('max_abs_diff_eager_compile', '-')} |")
PY
done
exit $rc
