#!/usr/bin/env bash
# `kernelskill config --defaults` prints a commented config that `kernelskill config --check`
# accepts once its campaign.tasks names tasks that exist; --check resolves the task globs and
# loads every manifest they match, refuses a config without campaign.tasks, reports a broken
# config as FILE:LINE:COL lines and exits 2; a missing file is a usage error (1); the shipped
# configs in configs/ are valid.
# Usage: config_defaults.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: config_defaults.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: config_defaults.sh KERNELSKILL SOURCE_DIR}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

"$ks" config --defaults >defaults.toml 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "config --defaults: exit $rc, wanted 0: $(cat err)"
for word in '[campaign]' '[search]' '[bench]' '[agents]' '[memory]' 'candidates_per_task' 'gpus'; do
  grep -qF -- "$word" defaults.toml || fail "config --defaults does not mention '$word'"
done
grep -q '^#' defaults.toml || fail "config --defaults has no comments"

# The defaults name tasks/quickstart/*.toml, relative to the config's folder: here, nothing.
"$ks" config --check defaults.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "config --check on the defaults away from the sources: exit $rc, wanted 2: $(cat out err)"
grep -q 'tasks/quickstart/\*.toml: matches no task manifest' out \
  || fail "config --check on the defaults: does not say the glob matches nothing: $(cat out)"
grep -q "relative to" out || fail "config --check on the defaults: no hint that globs are relative: $(cat out)"
src_q=$(printf '%s' "$src/tasks/quickstart" | sed 's/[&|]/\\&/g')
sed "s|\"tasks/quickstart/\\*.toml\"|\"$src_q/*.toml\"|" defaults.toml >defaults-here.toml
"$ks" config --check defaults-here.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "config --check on the defaults with real tasks: exit $rc, wanted 0: $(cat out err)"
grep -q '^ok: 8 tasks' out || fail "config --check on the defaults printed '$(cat out)', wanted 'ok: 8 tasks'"
grep -q '^  relu ' out || fail "config --check does not list the tasks: $(cat out)"

# A config without campaign.tasks is refused rather than given a suite it did not ask for.
printf '[campaign]\noutput = "out"\n' >no-tasks.toml
"$ks" config --check no-tasks.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "config --check no-tasks.toml: exit $rc, wanted 2"
grep -q '^no-tasks.toml:1:1: campaign.tasks is not set' out || fail "config --check no-tasks.toml: $(cat out)"

# Two problems, on lines 3 and 5: both reported with their positions, exit 2.
cat >bad.toml <<'TOML'
[campaign]
output = "out"
candidats_per_task = 3
[search]
branches = 0
TOML
"$ks" config --check bad.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "config --check bad.toml: exit $rc, wanted 2"
grep -qE '^bad\.toml:3:[0-9]+: ' out || fail "config --check: no bad.toml:3:COL line in: $(cat out)"
grep -qE '^bad\.toml:5:[0-9]+: ' out || fail "config --check: no bad.toml:5:COL line in: $(cat out)"
grep -q 'candidates_per_task' out || fail "config --check: no suggestion for the misspelt key: $(cat out)"
grep -q 'invalid config' err || fail "config --check: stderr does not say the config is invalid: $(cat err)"

"$ks" config --check missing.toml >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "config --check missing.toml: exit $rc, wanted 1 (a file named on the command line)"
grep -q 'missing.toml' err || fail "config --check missing.toml: the file is not named: $(cat err)"

"$ks" config >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "config without --defaults or --check: exit $rc, wanted 1 (usage)"

"$ks" config --defaults --check x.toml >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "config --defaults --check: exit $rc, wanted 1 (they exclude each other)"

for shipped in "$src"/configs/*.toml; do
  "$ks" config --check "$shipped" >out 2>err; rc=$?
  [ "$rc" -eq 0 ] || fail "config --check $shipped: exit $rc: $(cat out err)"
done

if [ "$failures" -ne 0 ]; then
  echo "config_defaults.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "config_defaults.sh: all checks passed"
