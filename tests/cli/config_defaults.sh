#!/usr/bin/env bash
# `kernelskill config --defaults` prints a commented config that `kernelskill config --check`
# accepts; --check reports a broken config as FILE:LINE:COL lines and exits 2; the shipped
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

"$ks" config --check defaults.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "config --check on the defaults: exit $rc, wanted 0: $(cat out err)"
[ "$(cat out)" = "ok" ] || fail "config --check on the defaults printed '$(cat out)', wanted 'ok'"

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
[ "$rc" -eq 2 ] || fail "config --check missing.toml: exit $rc, wanted 2"
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
