#!/usr/bin/env bash
# Adding an op of one's own: `kernelskill task new NAME` writes a manifest and a reference that
# `task check` accepts and a dry run compiles as they are; `task check` reports a broken
# manifest as FILE:LINE:COL lines (exit 2), a tunable the reference lacks at the tunable's
# position, a reference that does not compile with nvcc's diagnostics naming the reference's
# file and line; a missing manifest is a usage error (1), as everywhere.
# nvcc is tests/actors/fake_nvcc.sh.
# Usage: task_command.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: task_command.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: task_command.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# new: two files, next steps printed; they check and dry-run as they are.
"$ks" task new gelu --shape 256,512 --dir ops >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task new: exit $rc: $(cat out err)"
[ -f ops/gelu.toml ] && [ -f ops/gelu_ref.cu ] || fail "task new: did not write ops/gelu.toml and ops/gelu_ref.cu: $(ls -R)"
grep -q 'kernelskill task check ops/gelu.toml' out || fail "task new: no next step: $(cat out)"
grep -q 'shape = \[256, 512\]' ops/gelu.toml || fail "task new: the shape is not in the manifest: $(cat ops/gelu.toml)"
grep -q 'your operator' ops/gelu_ref.cu || fail "task new: the reference does not say where the op goes"

"$ks" task check ops/gelu.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check on a new task: exit $rc: $(cat out err)"
grep -q '^ok: gelu (ops/gelu.toml): family elementwise, 1 input, 1 output, 2 tunables, its reference compiles for sm_90a' out \
  || fail "task check: no ok line: $(cat out)"

printf '[campaign]\ntasks = ["ops/*.toml"]\noutput = "campaign-out"\n' >campaign.toml
"$ks" run campaign.toml --dry-run --progress 0 >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "a dry run of the new task: exit $rc: $(cat out err)"

# new refuses to overwrite, and a name that is not one.
"$ks" task new gelu --dir ops >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "task new over existing files: exit $rc, wanted 1"
grep -q -- '--force' err || fail "task new over existing files: no hint at --force: $(cat err)"
"$ks" task new gelu --dir ops --force >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task new --force: exit $rc: $(cat err)"
"$ks" task new Bad-Name >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "task new Bad-Name: exit $rc, wanted 1"

# check: a broken manifest, every problem at its position.
cat >bad.toml <<'TOML'
name = "bad"
family = "elementwise"
reference = "ops/gelu_ref.cu"
inputs = [ { name = "x", dtype = "float42", shape = [4] } ]
outputs = [ { name = "y", dtype = "f32", shape = [0] } ]
cost = { flops = 1.0, bytes = 32.0 }
TOML
"$ks" task check bad.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check bad.toml: exit $rc, wanted 2"
grep -qE '^bad\.toml:4:[0-9]+: .*float42' out || fail "task check bad.toml: no bad.toml:4:COL line: $(cat out)"
grep -qE '^bad\.toml:5:[0-9]+: ' out || fail "task check bad.toml: no bad.toml:5:COL line: $(cat out)"

# check: a tunable the reference lacks, at the tunable's position in the manifest.
sed 's|tunables = { |tunables = { KS_NOT_A_MACRO = [1, 2], |' ops/gelu.toml >ops/untunable.toml
sed -i 's|name = "gelu"|name = "untunable"|; s|reference = "gelu_ref.cu"|reference = "gelu_ref.cu"|' ops/untunable.toml
line=$(grep -n KS_NOT_A_MACRO ops/untunable.toml | cut -d: -f1)
"$ks" task check ops/untunable.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check untunable: exit $rc, wanted 2: $(cat out err)"
grep -qE "^ops/untunable\.toml:$line:[0-9]+: tunable KS_NOT_A_MACRO is not an overridable macro" out \
  || fail "task check untunable: not at ops/untunable.toml:$line: $(cat out)"
rm ops/untunable.toml

# check: a reference that does not compile: nvcc's diagnostics name it, at its line.
printf 'KS_FAKE_COMPILE_ERROR\n' >>ops/gelu_ref.cu
lines=$(wc -l <ops/gelu_ref.cu)
"$ks" task check ops/gelu.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task check, reference broken: exit $rc, wanted 2: $(cat out err)"
grep -q "ops/gelu_ref.cu:$lines: error" out || fail "task check, reference broken: not ops/gelu_ref.cu:$lines: $(cat out)"
"$ks" task check ops/gelu.toml --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check --no-compile: exit $rc: $(cat out err)"

# check: a missing manifest is a usage error; several manifests are checked in one go.
"$ks" task check nowhere.toml >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "task check nowhere.toml: exit $rc, wanted 1"
grep -q "nowhere.toml" err || fail "task check nowhere.toml: the file is not named: $(cat err)"
"$ks" task check "$src"/tasks/quickstart/*.toml --no-compile >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "task check on the quickstart suite: exit $rc: $(cat out err)"
[ "$(grep -c '^ok: ' out)" -eq 8 ] || fail "task check on the quickstart suite: not 8 ok lines: $(cat out)"

if [ "$failures" -ne 0 ]; then
  echo "task_command.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "task_command.sh: all checks passed"
