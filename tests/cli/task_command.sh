#!/usr/bin/env bash
# Adding an op of one's own. `kernelskill task new NAME --family F` writes, for every family
# `task new --help` offers (the engine's table, as families/ holds their templates), a family
# manifest that `task check` accepts and a dry run compiles as it is, its tensors from --shape;
# `--family custom` writes a manifest and a hand-written reference instead, with no family's
# params. `task check` reports a broken manifest as FILE:LINE:COL lines (exit 2), a tunable
# the reference lacks at the tunable's position, a reference that does not compile with
# nvcc's diagnostics naming the reference's file and line; it warns (and the dry run warns) of
# a hand-written reference beside a family's params at the reference's line, and of tensors
# the GPU cannot hold (the calibration cache's GPU, --gpu-memory, or an assumed 80 GB), exit 0
# unless --strict; a missing manifest is a usage error (1), as everywhere.
# nvcc is tests/actors/fake_nvcc.sh; KS_TEST_REAL_NVCC=1 also checks every family's skeleton
# with the real nvcc (minutes: one compile per family).
# Usage: task_command.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: task_command.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: task_command.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# Runs `task check MANIFEST` and expects exit 0 and a line matching REGEX.
check_ok() {
  "$ks" task check "$1" >out 2>err; local rc=$?
  [ "$rc" -eq 0 ] || fail "task check $1: exit $rc: $(cat out err)"
  grep -q "$2" out || fail "task check $1: no line matching '$2': $(cat out)"
}

export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# The compile and calibration caches of this test only: no GPU recorded by this machine.
export XDG_CACHE_HOME="$tmp/xdg"

# new: one family manifest (elementwise by default, op NAME(x) for a function's name), next
# steps printed; it checks and dry-runs as it is.
"$ks" task new gelu --shape 256,512 --dir ops >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task new: exit $rc: $(cat out err)"
[ -f ops/gelu.toml ] || fail "task new: did not write ops/gelu.toml: $(ls -R)"
[ -f ops/gelu_ref.cu ] && fail "task new: a family task got a hand-written reference"
grep -q 'kernelskill task check ops/gelu.toml' out || fail "task new: no next step: $(cat out)"
grep -q 'shape = \[256, 512\]' ops/gelu.toml || fail "task new: the shape is not in the manifest: $(cat ops/gelu.toml)"
grep -q '^op = "gelu(x)"$' ops/gelu.toml || fail "task new gelu: op is not gelu(x): $(cat ops/gelu.toml)"
grep -q '^reference' ops/gelu.toml && fail "task new: a family manifest names a reference"

check_ok ops/gelu.toml '^ok: gelu (ops/gelu.toml): family elementwise, 1 input, 1 output, 2 tunables, its reference compiles for sm_90a$'

# The brief's case: a softmax skeleton checks as it is.
"$ks" task new t --family softmax --dir x >out 2>err && "$ks" task check x/t.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task new t --family softmax, task check: exit $rc: $(cat out err)"

# Every family --help offers is the engine's (the folders of families/ hold their templates),
# and each skeleton checks; then the dry run compiles them all.
"$ks" task new --help | tr '\n' ' ' | tr -s ' ' >help.txt
families=$(sed -n 's/.*Op family: one of \([a-z_, ]*\) (docs\/tasks.md.*/\1/p' help.txt | tr -d ',')
[ -n "$families" ] || fail "task new --help: no family list: $("$ks" task new --help)"
on_disk=$(cd "$src/families" && for d in */; do [ -f "$d/reference.cu.mustache" ] && echo "${d%/}"; done | sort | tr '\n' ' ')
[ "$(echo $families | tr ' ' '\n' | sort | tr '\n' ' ')" = "$on_disk" ] \
  || fail "task new --help lists '$families', families/ holds '$on_disk'"
grep -q 'or custom (an op no family states' help.txt || fail "task new --help does not offer custom"
count=0
for f in $families custom; do
  "$ks" task new "t_$f" --family "$f" --dir fam >out 2>err || fail "task new --family $f: $(cat out err)"
  count=$((count + 1))
done
"$ks" task check fam/*.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check on every family's skeleton: exit $rc: $(cat out err)"
[ "$(grep -c '^ok: .*its reference compiles for sm_90a$' out)" -eq "$count" ] \
  || fail "task check on every family's skeleton: not $count ok lines without a warning: $(cat out)"
printf '[campaign]\ntasks = ["fam/*.toml", "ops/*.toml"]\noutput = "campaign-out"\n' >campaign.toml
"$ks" run campaign.toml --dry-run --progress 0 >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "a dry run of every family's skeleton: exit $rc: $(cat out err)"
grep -q 'warning' out && fail "a dry run of the skeletons warned: $(grep warning out)"
if [ "${KS_TEST_REAL_NVCC:-0}" = 1 ]; then
  KS_NVCC= "$ks" task check fam/*.toml --cache-dir "$tmp/real-nvcc" >out 2>err; rc=$?
  [ "$rc" -eq 0 ] || fail "task check with the real nvcc: exit $rc: $(cat out err)"
fi

# --shape as the family reads it; a shape or family it cannot take is a usage error.
"$ks" task new pool2 --family pool --shape 2,3,9,9 --dir shapes >out 2>err || fail "pool --shape: $(cat err)"
grep -q 'shape = \[2, 3, 4, 4\]' shapes/pool2.toml || fail "pool 2,3,9,9: y is not [2, 3, 4, 4]: $(cat shapes/pool2.toml)"
"$ks" task new mm --family matmul --shape 64,32,16 --dir shapes >out 2>err || fail "matmul --shape: $(cat err)"
grep -q 'name = "B", dtype = "f32", shape = \[32, 16\]' shapes/mm.toml || fail "matmul 64,32,16: B is not [32, 16]"
"$ks" task new mv --family matvec --shape 100,200 --dir shapes >out 2>err || fail "matvec --shape: $(cat err)"
grep -q 'name = "y", dtype = "f32", shape = \[100\]' shapes/mv.toml || fail "matvec 100,200: y is not [100]"
"$ks" task check shapes/*.toml >out 2>err || fail "task check on shaped skeletons: $(cat out err)"
"$ks" task new p --family pool --shape 1024,1024 --dir shapes >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "pool --shape 1024,1024: exit $rc, wanted 1"
grep -q 'N, C, H, W' err || fail "pool --shape 1024,1024: no hint at [N, C, H, W]: $(cat err)"
"$ks" task new s --family sofmax >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "--family sofmax: exit $rc, wanted 1"
grep -q "did you mean 'softmax'" err || fail "--family sofmax: no suggestion: $(cat err)"

# custom: a manifest and a hand-written reference, no family's params.
"$ks" task new myop --family custom --shape 256,512 --dir ops >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task new --family custom: exit $rc: $(cat out err)"
[ -f ops/myop.toml ] && [ -f ops/myop_ref.cu ] || fail "task new --family custom: did not write ops/myop.toml and ops/myop_ref.cu: $(ls -R)"
grep -q 'your operator' ops/myop_ref.cu || fail "task new --family custom: the reference does not say where the op goes"
grep -q '^family = "custom"$' ops/myop.toml || fail "task new --family custom: family is not custom"
grep -qE '^(params|\[params\])' ops/myop.toml && fail "task new --family custom: the manifest has params"
check_ok ops/myop.toml '^ok: myop (ops/myop.toml): family custom, 1 input, 1 output, 2 tunables, its reference compiles for sm_90a$'
"$ks" run campaign.toml --dry-run --progress 0 >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "a dry run with the custom task: exit $rc: $(cat out err)"

# new refuses to overwrite, and a name that is not one.
"$ks" task new myop --family custom --dir ops >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "task new over existing files: exit $rc, wanted 1"
grep -q -- '--force' err || fail "task new over existing files: no hint at --force: $(cat err)"
"$ks" task new gelu --dir ops --shape 256,512 --force >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task new --force: exit $rc: $(cat err)"
"$ks" task new Bad-Name >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "task new Bad-Name: exit $rc, wanted 1"

# The trap: a hand-written reference beside a family's params. Warned at the reference's line
# (check and dry run), exit 0; --strict refuses it.
{ echo 'name = "trap"'; echo 'family = "elementwise"'; echo 'reference = "myop_ref.cu"'
  grep -E '^(inputs|outputs|  \{|\])' ops/myop.toml; echo 'params = { op = "x" }'; } >ops/trap.toml
"$ks" task check ops/trap.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check trap: exit $rc, wanted 0 (a warning): $(cat out err)"
grep -q '^ops/trap\.toml:3:13: warning: a hand-written reference (myop_ref.cu) beside family elementwise' out \
  || fail "task check trap: no warning at ops/trap.toml:3:13: $(cat out)"
grep -q 'op = "x"' out && grep -q 'remove `reference`' out && grep -q 'family = "custom"' out \
  || fail "task check trap: the warning does not say what to do: $(cat out)"
grep -q '^ok: trap .*; 1 warning (above)$' out || fail "task check trap: the ok line does not count the warning: $(cat out)"
"$ks" task check ops/trap.toml --strict >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check --strict trap: exit $rc, wanted 2"
grep -q 'warned with --strict' err || fail "task check --strict trap: $(cat err)"
"$ks" run campaign.toml --dry-run --progress 0 >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "a dry run with the trap: exit $rc: $(cat out err)"
grep -q '^trap: ops/trap\.toml:3:13: warning: a hand-written reference' out \
  || fail "the dry run does not warn of the trap at its line: $(cat out)"
grep -q '^  trap: 1 warning about its manifest (above)$' out \
  || fail "the dry run's summary does not count the trap's warning: $(cat out)"
rm ops/trap.toml

# Tensors the GPU cannot hold: 34 GB in and out is about 207 GB in the bench worker.
"$ks" task new big --shape 65536,131072 --dir mem >out 2>err || fail "task new big: $(cat err)"
"$ks" task check mem/big.toml --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check big: exit $rc, wanted 0 (a warning): $(cat out err)"
grep -qE '^mem/big\.toml:[0-9]+:3: warning: the bench worker needs about 207 GB of GPU memory for this task, more than the GPU has \(80 GB, assumed: no GPU is known here' out \
  || fail "task check big: no warning against the assumed 80 GB: $(cat out)"
"$ks" task check mem/big.toml --no-compile --gpu-memory 300 >out 2>err; rc=$?
[ "$rc" -eq 0 ] && ! grep -q warning out || fail "task check big --gpu-memory 300: $(cat out err)"
# A GPU recorded in the calibration cache (as `devices` writes it) is the one checked against.
mkdir -p "$XDG_CACHE_HOME/kernelskill/calibration"
device='"index": 0, "device_count": 1, "name": "NVIDIA Test 30GB", "uuid": "GPU-test", "arch": "sm_90a", "cc": "9.0", "sms": 132, "l2_bytes": 52428800'
printf '{"uuid": "GPU-test", "device": {%s, "memory_bytes": 30000000000}, "peaks": {}}\n' "$device" \
  >"$XDG_CACHE_HOME/kernelskill/calibration/GPU-test.json"
"$ks" task check "$src/tasks/kernelbench-l1/19_relu.toml" --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check relu on a 30 GB GPU: exit $rc: $(cat out err)"
grep -q 'more than NVIDIA Test 30GB has (30 GB, from the calibration cache' out \
  || fail "task check relu: no warning against the cached 30 GB GPU: $(cat out)"
printf '[campaign]\ntasks = ["mem/*.toml"]\noutput = "campaign-out"\n' >big.toml
"$ks" run big.toml --dry-run --progress 0 >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "a dry run of big: exit $rc: $(cat out err)"
grep -q '^big: mem/big\.toml:[0-9]*:3: warning: the bench worker needs about 207 GB .* more than NVIDIA Test 30GB has' out \
  || fail "the dry run does not warn that big cannot fit: $(cat out)"
rm -r mem "$XDG_CACHE_HOME/kernelskill/calibration"

# check: a broken manifest, every problem at its position.
cat >bad.toml <<'TOML'
name = "bad"
family = "custom"
reference = "ops/myop_ref.cu"
inputs = [ { name = "x", dtype = "float42", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [0] } ]
cost = { flops = 1.0, bytes = 32.0 }
TOML
"$ks" task check bad.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check bad.toml: exit $rc, wanted 2"
grep -qE '^bad\.toml:4:[0-9]+: .*float42' out || fail "task check bad.toml: no bad.toml:4:COL line: $(cat out)"
grep -qE '^bad\.toml:5:[0-9]+: ' out || fail "task check bad.toml: no bad.toml:5:COL line: $(cat out)"

# check: a tunable the reference lacks, at the tunable's position in the manifest.
sed 's|tunables = { |tunables = { KS_NOT_A_MACRO = [1, 2], |; s|name = "myop"|name = "untunable"|' \
  ops/myop.toml >ops/untunable.toml
line=$(grep -n KS_NOT_A_MACRO ops/untunable.toml | cut -d: -f1)
"$ks" task check ops/untunable.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check untunable: exit $rc, wanted 2: $(cat out err)"
grep -qE "^ops/untunable\.toml:$line:[0-9]+: tunable KS_NOT_A_MACRO is not an overridable macro" out \
  || fail "task check untunable: not at ops/untunable.toml:$line: $(cat out)"
rm ops/untunable.toml

# check: a reference that does not compile: nvcc's diagnostics name it, at its line.
printf 'KS_FAKE_COMPILE_ERROR\n' >>ops/myop_ref.cu
lines=$(wc -l <ops/myop_ref.cu)
"$ks" task check ops/myop.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check, reference broken: exit $rc, wanted 2: $(cat out err)"
grep -q "ops/myop_ref.cu:$lines: error" out || fail "task check, reference broken: not ops/myop_ref.cu:$lines: $(cat out)"
"$ks" task check ops/myop.toml --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check --no-compile: exit $rc: $(cat out err)"

# check: a missing manifest is a usage error; several manifests are checked in one go.
"$ks" task check nowhere.toml >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "task check nowhere.toml: exit $rc, wanted 1"
grep -q "nowhere.toml" err || fail "task check nowhere.toml: the file is not named: $(cat err)"
"$ks" task check "$src"/tasks/quickstart/*.toml --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check on the quickstart suite: exit $rc: $(cat out err)"
[ "$(grep -c '^ok: ' out)" -eq 8 ] || fail "task check on the quickstart suite: not 8 ok lines: $(cat out)"
"$ks" task check "$src"/tasks/kernelbench-l1/*.toml --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] && ! grep -q warning out || fail "the KernelBench suite warns on an 80 GB GPU: $(cat out err)"

if [ "$failures" -ne 0 ]; then
  echo "task_command.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "task_command.sh: all checks passed"
