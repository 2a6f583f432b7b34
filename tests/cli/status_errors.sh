#!/usr/bin/env bash
# `kernelskill status` and `kernelskill inspect` on a folder that does not exist (a usage
# error, 1, as every missing path on the command line) or holds no campaign (2) say so
# clearly, and never create a store there.
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
done

if [ "$failures" -ne 0 ]; then
  echo "status_errors.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "status_errors.sh: all checks passed"
