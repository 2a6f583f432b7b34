#!/usr/bin/env bash
# `kernelskill status` and `kernelskill inspect` on a folder that does not exist (a usage
# error, 1, as every missing path on the command line) or holds no campaign (2) say so
# clearly, and never create a store there; with --json (and `task show --json` of a bad
# manifest) stdout is one JSON failure object.
# Usage: status_errors.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: status_errors.sh KERNELSKILL SOURCE_DIR}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

for cmd in status inspect; do
  "$ks" $cmd no-such-folder >out 2>err; rc=$?
  [ "$rc" -eq 1 ] || fail "$cmd on a missing folder: exit $rc, wanted 1"
  grep -q "'no-such-folder' does not exist" err || fail "$cmd on a missing folder: does not say it is missing: $(cat err)"
  [ ! -e no-such-folder ] || fail "$cmd created the missing folder"

  mkdir -p empty
  "$ks" $cmd empty >out 2>err; rc=$?
  [ "$rc" -eq 2 ] || fail "$cmd on an empty folder: exit $rc, wanted 2"
  grep -q "no campaign in 'empty'" err || fail "$cmd on an empty folder: unclear message: $(cat err)"
  [ -z "$(ls -A empty)" ] || fail "$cmd wrote into the empty folder: $(ls -A empty)"

  "$ks" $cmd >out 2>err; rc=$?
  [ "$rc" -eq 1 ] || fail "$cmd without a folder: exit $rc, wanted 1 (usage)"

  # With --json, stdout is one JSON object on failure too: what failed and its exit code.
  for case in "no-such-folder 1 usage error" "empty 2 task error"; do
    set -- $case
    "$ks" $cmd --json "$1" >out 2>err; rc=$?
    [ "$rc" -eq "$2" ] || fail "$cmd --json $1: exit $rc, wanted $2"
    python3 - "$2" "$3 $4" out <<'PY' || fail "$cmd --json $1: no JSON failure object: $(cat out)"
import json, sys
doc = json.load(open(sys.argv[3]))
assert doc["ok"] is False, doc
assert doc["failure"]["exit_code"] == int(sys.argv[1]), doc
assert doc["failure"]["kind"] == sys.argv[2], doc
assert doc["failure"]["message"], doc
PY
  done
done

printf 'name = "x"\nfamily = "sofmax"\n' >bad.toml
"$ks" task show --json bad.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "task show --json of a bad manifest: exit $rc, wanted 2"
python3 -c 'import json,sys; d=json.load(open("out")); assert d["ok"] is False and d["failure"]["exit_code"] == 2 and "sofmax" in d["failure"]["message"], d' \
  || fail "task show --json of a bad manifest: no JSON failure object: $(cat out)"

if [ "$failures" -ne 0 ]; then
  echo "status_errors.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "status_errors.sh: all checks passed"
