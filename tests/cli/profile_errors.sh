#!/usr/bin/env bash
# `kernelskill profile` keeps the promises of its --help: the usage line and every option it
# lists, the exit codes: a bad manifest (2, with file:line), a missing manifest or candidate or
# a bad option value (1), a candidate that does not compile (11, nvcc's diagnostics naming the
# candidate's file and line), no GPU (19); --json prints one JSON object on failure too.
# The compile check uses --arch sm_90a, so it needs nvcc but no GPU.
# Usage: profile_errors.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: profile_errors.sh KERNELSKILL SOURCE_DIR}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

. "$here/copy_task_fixture.sh"

# --help: the usage line, each option, and the exit codes it can return; exit 0.
"$ks" profile --help >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "--help: exit $rc, wanted 0"
grep -q 'Usage: kernelskill profile \[OPTIONS\] TASK.toml CANDIDATE.cu' out || fail "--help: no usage line: $(cat out)"
for opt in --json --arch --no-counters --max-ranges --seed --cache-dir --device --worker --job-timeout --sandbox; do
  grep -q -- "$opt" out || fail "--help: $opt is not listed"
done
for code in 11 12 13 15 17 19; do
  grep -qE "^  $code " out || fail "--help: exit code $code is not listed"
done
"$ks" help profile >out2 2>err; rc=$?
[ "$rc" -eq 0 ] && cmp -s out out2 || fail "help profile: exit $rc or not the same text as profile --help"

# No arguments, and bad option values: usage errors (1) naming what is wrong.
"$ks" profile >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "no arguments: exit $rc, wanted 1"
grep -qi 'TASK.toml' err || fail "no arguments: the missing TASK.toml is not named: $(cat err)"
"$ks" profile task.toml good.cu --max-ranges 0 --arch sm_90a >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "--max-ranges 0: exit $rc, wanted 1"
grep -q 'max-ranges' err || fail "--max-ranges 0: the option is not named: $(cat err)"
"$ks" profile task.toml good.cu --job-timeout -3 --arch sm_90a >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "--job-timeout -3: exit $rc, wanted 1"

# A manifest with an error on line 4: exit 2, the message names bad.toml and the line.
"$ks" profile bad.toml good.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "bad manifest: exit $rc, wanted 2"
grep -qE 'bad\.toml:4:[0-9]+' err || fail "bad manifest: no bad.toml:4:COL in: $(cat err)"
"$ks" profile bad.toml good.cu --arch sm_90a --cache-dir cache --json >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "bad manifest --json: exit $rc, wanted 2"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' out 2>/dev/null || fail "bad manifest --json: stdout is not one JSON object: $(cat out)"

# Missing files: exit 1, named.
"$ks" profile nowhere.toml good.cu --arch sm_90a >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "missing manifest: exit $rc, wanted 1"
grep -q 'nowhere.toml' err || fail "missing manifest: not named in: $(cat err)"
"$ks" profile task.toml missing.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "missing candidate: exit $rc, wanted 1"
grep -q 'missing.cu' err || fail "missing candidate: not named in: $(cat err)"

nvcc=$(find_nvcc)
if [ -z "$nvcc" ]; then
  if [ "$failures" -ne 0 ]; then
    echo "profile_errors.sh: $failures check(s) failed" >&2
    exit 1
  fi
  echo "profile_errors.sh: skipped the compile checks: nvcc not found (KS_NVCC, /usr/local/cuda/bin, PATH)"
  exit 125
fi

# A candidate that does not compile: exit 11 with nvcc's diagnostics naming broken.cu:LINE.
sed 's/return cudaGetLastError/return no_such_identifier + cudaGetLastError/' ref.cu >broken.cu
"$ks" profile task.toml broken.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 11 ] || fail "broken candidate: exit $rc, wanted 11 (compile_error): $(cat err)"
line=$(grep -n no_such_identifier broken.cu | cut -d: -f1)
grep -q "^broken.cu:$line: error" err || fail "broken candidate: the diagnostics do not name broken.cu:$line: $(cat err)"
"$ks" profile task.toml broken.cu --arch sm_90a --cache-dir cache --json >out 2>err; rc=$?
[ "$rc" -eq 11 ] || fail "broken candidate --json: exit $rc, wanted 11"
grep -q '"compile_error"' out || fail "broken candidate --json: no compile_error in: $(cat out)"

# A good candidate without a GPU: no_device (19), saying so.
if [ ! -e /dev/nvidia0 ]; then
  "$ks" profile task.toml good.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
  [ "$rc" -eq 19 ] || fail "good candidate, no GPU: exit $rc, wanted 19 (no_device): $(cat err)"
  grep -q 'no CUDA device' err || fail "good candidate, no GPU: $(cat err)"
  grep -q 'compiled for sm_90a' err || fail "good candidate, no GPU: does not say it compiled: $(cat err)"
fi

if [ "$failures" -ne 0 ]; then
  echo "profile_errors.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "profile_errors.sh: all checks passed"
