#!/usr/bin/env bash
# `kernelskill eval` gives every error its own message and exit code: a bad manifest (2, with
# file:line), a missing manifest or candidate (1), a candidate that does not compile (11, with
# nvcc's diagnostics naming the candidate's file and line, not the cache's kernel.cu; one that
# includes a file by an absolute path is refused before nvcc runs, 11 too). The
# compile check uses --arch sm_90a, so it needs nvcc but no GPU.
# Usage: eval_errors.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: eval_errors.sh KERNELSKILL SOURCE_DIR}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

. "$here/copy_task_fixture.sh"

# A manifest with an error on line 4: exit 2, the message names bad.toml and the line.
"$ks" eval bad.toml good.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "bad manifest: exit $rc, wanted 2"
grep -qE 'bad\.toml:4:[0-9]+' err || fail "bad manifest: no bad.toml:4:COL in: $(cat err)"
grep -q 'float42' err || fail "bad manifest: the message does not name the bad dtype: $(cat err)"

"$ks" eval bad.toml good.cu --arch sm_90a --cache-dir cache --json >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "bad manifest --json: exit $rc, wanted 2"
grep -q '"task_error"' out || fail "bad manifest --json: no task_error in: $(cat out)"

# A manifest that does not exist: exit 1, as any file named on the command line, named.
"$ks" eval nowhere.toml good.cu --arch sm_90a >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "missing manifest: exit $rc, wanted 1"
grep -q 'nowhere.toml' err || fail "missing manifest: not named in: $(cat err)"

# A candidate file that does not exist: exit 1 (usage), named, before any compile.
"$ks" eval task.toml missing.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 1 ] || fail "missing candidate: exit $rc, wanted 1"
grep -q "cannot read the candidate 'missing.cu': no such file" err \
  || fail "missing candidate: unclear message: $(cat err)"

# A candidate that does not compile: exit 11 (compile_error) with nvcc's own words.
nvcc=$(find_nvcc)
if [ -z "$nvcc" ]; then
  if [ "$failures" -ne 0 ]; then
    echo "eval_errors.sh: $failures check(s) failed" >&2
    exit 1
  fi
  echo "eval_errors.sh: skipped the compile checks: nvcc not found (KS_NVCC, /usr/local/cuda/bin, PATH)"
  exit 125
fi

sed 's/return cudaGetLastError/return no_such_identifier + cudaGetLastError/' ref.cu >broken.cu
"$ks" eval task.toml broken.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 11 ] || fail "broken candidate: exit $rc, wanted 11 (compile_error): $(cat err)"
grep -q 'error' err || fail "broken candidate: nvcc's 'error' is not shown: $(cat err)"
grep -q 'no_such_identifier' err || fail "broken candidate: nvcc's diagnostics are not verbatim: $(cat err)"
line=$(grep -n no_such_identifier broken.cu | cut -d: -f1)
grep -q "^broken.cu:$line: error" err || fail "broken candidate: the diagnostics do not name broken.cu:$line: $(cat err)"
grep -q 'kernel\.cu' err && fail "broken candidate: the diagnostics name the cache's kernel.cu: $(cat err)"
grep -q 'compiling' err || fail "broken candidate: no progress line on stderr: $(cat err)"

"$ks" eval task.toml broken.cu --arch sm_90a --cache-dir cache --json >out 2>err; rc=$?
[ "$rc" -eq 11 ] || fail "broken candidate --json: exit $rc, wanted 11"
grep -q '"kind": "compile_error"' out || fail "broken candidate --json: $(cat out)"
grep -q 'no_such_identifier' out || fail "broken candidate --json: no diagnostics in: $(cat out)"

# A candidate that includes a file by its absolute path: refused before nvcc runs (11), and
# the file's content appears nowhere (issue 27: nvcc quoted it, and it went to the model).
echo 'planted-secret-5f3a' >"$tmp/secret.txt"
{ printf '#include "%s"\n' "$tmp/secret.txt"; cat ref.cu; } >planted.cu
"$ks" eval task.toml planted.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
[ "$rc" -eq 11 ] || fail "planted include: exit $rc, wanted 11 (compile_error): $(cat err)"
grep -q 'planted.cu:1: error: #include ".*secret.txt": an absolute path' err \
  || fail "planted include: not refused by name: $(cat err)"
grep -q 'planted-secret-5f3a' out err && fail "planted include: the file's content was shown"

# A good candidate compiles; without a GPU the next step says there is none (19).
if [ ! -e /dev/nvidia0 ]; then
  "$ks" eval task.toml good.cu --arch sm_90a --cache-dir cache >out 2>err; rc=$?
  [ "$rc" -eq 19 ] || fail "good candidate, no GPU: exit $rc, wanted 19 (no_device): $(cat err)"
  grep -q 'no CUDA device' err || fail "good candidate, no GPU: $(cat err)"
  grep -q 'compiled for sm_90a' err || fail "good candidate, no GPU: does not say it compiled: $(cat err)"
fi

if [ "$failures" -ne 0 ]; then
  echo "eval_errors.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "eval_errors.sh: all checks passed"
