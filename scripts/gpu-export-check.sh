#!/usr/bin/env bash
# On a GPU host with torch: a campaign's winners exported as a PyTorch package, built, and
# checked as issue 24 asks (tools/ks_export_check.py); prints a table last.
#
#   scripts/gpu-export-check.sh [OUTPUT_DIR] [DIST]
#
# Without OUTPUT_DIR, runs a small campaign first: GELU over 8192 x 8192 and a row softmax of
# 4096 x 8192 (family tasks written here), and tests/tools/import_user/my_blocks.py's
# ScaledResidual imported at [8192, 4096] (a drop-in module), BUDGET candidates per task
# (default 8) and at most WALL seconds (default 180). Then:
#   1. kernelskill export OUTPUT_DIR --out PKG (every task with a winner);
#   2. the package built ahead of time with pip (--no-build-isolation, into a folder of its
#      own; where this pip cannot build a wheel, python setup.py build_ext --inplace);
#   3. ks_export_check.py: every op against its torch expression within its tolerance, its
#      time through PyTorch (CUDA events, L2 flushed, median) against the campaign's (within
#      5%), each drop-in module's verify(), and a small model with the module swapped: same
#      output, both timed.
# DIST: the install tree (scripts/build.sh; default dist). Logs go to $OUT (the device tool's
# folder) or out/: export-check.log (everything), export-check.json (the rows), the package's
# README.md; at most 8 files, as the device tool brings back.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
given=""
dist=dist
for arg in "$@"; do
  if [ -x "$arg/bin/kernelskill" ]; then dist=$arg; else given=$arg; fi
done
dist=$(realpath "$dist")
out=$(realpath -m "${OUT:-out}")
work=${WORK:-/tmp/ks-export-check}
mkdir -p "$out" "$work"
export PATH=/usr/local/cuda/bin:$PATH KS_INCLUDE_DIR=$dist/include
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ks-cache} KERNELSKILL_EXPORT_CACHE=$work/jit-cache
ks=$dist/bin/kernelskill
[ -x "$ks" ] || { echo "gpu-export-check.sh: no $ks (scripts/build.sh, then carry dist/)" >&2; exit 1; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { echo "gpu-export-check.sh: python3 has no torch with CUDA here" >&2; exit 3; }
log=$out/export-check.log
: >"$log"
declare -a summary
step() {  # step NAME COMMAND...: runs it, logs it, notes rc and seconds
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name: $*" | tee -a "$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  summary+=("| $name | rc=$rc | $((SECONDS - t0)) s |")
  tail -n 25 "$log" | sed 's/^/    /'
  return $rc
}

if [ -z "$given" ]; then
  tasks=$work/tasks
  rm -rf "$tasks" "$work/campaign-out"
  mkdir -p "$tasks"
  cat >"$tasks/gelu_8k.toml" <<'TOML'
name = "gelu_8k"
family = "elementwise"
about = "GELU (erf form) over 8192 x 8192 fp32"
inputs  = [ { name = "x", dtype = "f32", shape = [8192, 8192], init = "normal" } ]
outputs = [ { name = "y", dtype = "f32", shape = [8192, 8192] } ]
params  = { op = "gelu(x)" }
tolerance = { atol = 1e-6, rtol = 1e-5, norm_rel = 1e-6 }
TOML
  cat >"$tasks/softmax_rows.toml" <<'TOML'
name = "softmax_rows"
family = "softmax"
about = "Row softmax, 4096 x 8192 fp32"
inputs  = [ { name = "x", dtype = "f32", shape = [4096, 8192], init = "normal" } ]
outputs = [ { name = "y", dtype = "f32", shape = [4096, 8192] } ]
params  = { op = "softmax", dim = 1 }
tolerance = { atol = 1e-8, rtol = 1e-4, norm_rel = 1e-5 }
TOML
  step import "$ks" import "tests/tools/import_user/my_blocks.py:ScaledResidual" \
    --input 'f32[8192,4096]' --input 'f32[8192,4096]' --init '[4096, 0.5]' --out "$tasks/imported" \
    --python python3
  cat >"$work/campaign.toml" <<TOML
gpus = [0]
[campaign]
tasks = ["$tasks/gelu_8k.toml", "$tasks/softmax_rows.toml", "$tasks/imported/my_blocks_scaledresidual.toml"]
output = "$work/campaign-out"
candidates_per_task = ${BUDGET:-8}
wall_time_s = ${WALL:-180}
[memory]
path = "$work/memory"
TOML
  step campaign "$ks" run "$work/campaign.toml" --progress 10
  given=$work/campaign-out
  cp "$given/report.md" "$out/campaign-report.md" 2>/dev/null
fi

pkg=$work/package
rm -rf "$pkg" "$work/site"
step export "$ks" export "$given" --out "$pkg" --name ks_exported --python python3
cp "$pkg/README.md" "$out/package-README.md" 2>/dev/null
# Ahead of time: pip into a folder of its own, against this torch; where pip cannot build a
# wheel here (an old setuptools without wheel), the package is built in place instead.
if step build-pip python3 -m pip install --no-build-isolation --no-deps --no-index \
    --target "$work/site" "$pkg"; then
  site=$work/site
else
  step build-inplace bash -c "cd '$pkg' && python3 setup.py build_ext --inplace"
  site=$pkg
fi
step check python3 tools/ks_export_check.py "$site" --json "$out/export-check.json"
check_rc=$?
sed -n '/^| op |/,$p' "$log" | tail -n 30
echo
echo "| step | result | time |"
echo "|---|---|---|"
printf '%s\n' "${summary[@]}"
exit $check_rc
