#!/usr/bin/env bash
# `kernelskill config --check` makes every check `run` makes before it needs a GPU (issue 27:
# it said "ok" for configs `run` then refused), and reports every problem at once, counted: an
# output folder in use by another run or holding something else (--overwrite accepted as by
# `run`), an API key variable that is not set, a prompt folder without its prompts, no nvcc;
# and `run` stops on the same problems before it writes anything (no bench worker: exit 17,
# crash, as `devices` says of it, before the output folder is made); an output folder that
# refuses root's files; hostile config files and manifests (issue 27).
# Usage: config_check.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: config_check.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: config_check.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
unset KS_TEST_CONFIG_CHECK_KEY

config() { # config FILE OUTPUT [AGENTS_SECTION]
  cat >"$1" <<TOML
[campaign]
tasks = ["$src/tasks/quickstart/19_relu.toml"]
output = "$2"
${3:-}
TOML
}

# A valid config: ok.
config good.toml fresh-out
"$ks" config --check good.toml >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "a valid config: exit $rc, wanted 0: $(cat out err)"
grep -q '^ok: 1 task' out || fail "a valid config: $(cat out)"
[ ! -e fresh-out ] || fail "config --check created the output folder"

# An output folder of something else and an unset key variable: both, counted, exit 2.
mkdir theirs
echo mine >theirs/notes.txt
config two.toml theirs "[agents]
backend = \"openai\"
endpoint = \"http://127.0.0.1:9/v1\"
model = \"m\"
api_key_env = \"KS_TEST_CONFIG_CHECK_KEY\""
"$ks" config --check two.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "two problems: exit $rc, wanted 2: $(cat out err)"
grep -q 'holds something other than a kernelskill output (notes.txt)' out \
  || fail "two problems: the foreign folder is not reported: $(cat out)"
grep -q 'KS_TEST_CONFIG_CHECK_KEY, which is not set' out \
  || fail "two problems: the unset key variable is not reported: $(cat out)"
grep -q '(2 problems)' err || fail "two problems: not counted as 2: $(cat err)"
# run stops on the same problems, before it writes anything.
timeout 60 "$ks" run two.toml --dry-run --progress 0 >run.out 2>run.err; rc=$?
[ "$rc" -eq 2 ] || fail "run on two problems: exit $rc, wanted 2: $(cat run.err)"
grep -q 'KS_TEST_CONFIG_CHECK_KEY' run.err || fail "run on two problems: the key is not reported: $(cat run.err)"
[ "$(ls -A theirs)" = notes.txt ] || fail "run on two problems: wrote into the folder: $(ls -A theirs)"
# --overwrite and the key set: ok.
KS_TEST_CONFIG_CHECK_KEY=k "$ks" config --check two.toml --overwrite >out 2>err; rc=$?
[ "$rc" -eq 0 ] || fail "--overwrite with the key set: exit $rc, wanted 0: $(cat out err)"

# A folder in use (its lock held, here by this script through flock(1) on a descriptor,
# standing in for a run): exit 3 from run, reported by config --check.
if command -v flock >/dev/null; then
  config busy.toml busy
  mkdir busy
  exec 9>busy/.kernelskill.lock
  flock -n 9 || fail "a busy folder: cannot take the lock for the test"
  "$ks" config --check busy.toml >out 2>err; rc=$?
  [ "$rc" -eq 2 ] || fail "a busy folder: exit $rc, wanted 2: $(cat out err)"
  grep -q 'is in use by another kernelskill process' out || fail "a busy folder: not reported: $(cat out)"
  timeout 60 "$ks" run busy.toml --dry-run --progress 0 >run.out 2>run.err; rc=$?
  [ "$rc" -eq 3 ] || fail "run on a busy folder: exit $rc, wanted 3: $(cat run.err)"
  exec 9>&-
  "$ks" config --check busy.toml >out 2>err; rc=$?
  [ "$rc" -eq 0 ] || fail "a folder no longer busy: exit $rc, wanted 0: $(cat out err)"
fi

# A prompt folder without the prompts: found by the check, not first by run.
mkdir empty-prompts
config prompts.toml prompts-out "[agents]
backend = \"openai\"
endpoint = \"http://127.0.0.1:9/v1\"
model = \"m\"
api_key_env = \"\"
prompts = \"empty-prompts\""
"$ks" config --check prompts.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "an empty prompt folder: exit $rc, wanted 2: $(cat out err)"
grep -q 'has no system.md' out || fail "an empty prompt folder: not reported: $(cat out)"

# What the machine lacks is reported with the config's problems, and `run` exits 3 on it
# (environment), as it did when nvcc was first looked for after the GPUs opened.
KS_NVCC=/nonexistent/nvcc "$ks" config --check two.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "no nvcc: exit $rc, wanted 2: $(cat out err)"
grep -q 'KS_NVCC names /nonexistent/nvcc' out || fail "no nvcc: not reported: $(cat out)"
grep -q '(3 problems)' err || fail "no nvcc beside two problems: not counted as 3: $(cat err)"
KS_NVCC=/nonexistent/nvcc timeout 60 "$ks" run good.toml --dry-run --progress 0 >run.out 2>run.err; rc=$?
[ "$rc" -eq 3 ] || fail "run without nvcc: exit $rc, wanted 3: $(cat run.err)"
"$ks" run good.toml --worker /nonexistent/worker \
  --progress 0 >run.out 2>run.err; rc=$?
[ "$rc" -eq 17 ] || fail "run without a bench worker: exit $rc, wanted 17 (crash, as devices): $(cat run.err)"
grep -q 'cannot start the bench worker /nonexistent/worker: it is not an executable file' run.err \
  || fail "run without a bench worker: not said: $(cat run.err)"
[ ! -e fresh-out ] || fail "run without a bench worker created the output folder"

# An output folder that refuses files to root too: /proc makes none, and access(2), which the
# check asked, says root may write it. Found by the check, and run stops before writing (exit
# 3, a folder that cannot be written, as for a busy one).
config proc.toml /proc/kernelskill-config-check-out
"$ks" config --check proc.toml >out 2>err; rc=$?
[ "$rc" -eq 2 ] || fail "an output folder under /proc: exit $rc, wanted 2: $(cat out err)"
grep -q 'campaign.output /proc/kernelskill-config-check-out: cannot create a file in /proc' out \
  || fail "an output folder under /proc: not reported: $(cat out)"
timeout 60 "$ks" run proc.toml --dry-run --progress 0 >run.out 2>run.err; rc=$?
[ "$rc" -eq 3 ] || fail "run on an output folder under /proc: exit $rc, wanted 3: $(cat run.err)"
grep -q 'cannot create a file in /proc' run.err \
  || fail "run on an output folder under /proc: not reported: $(cat run.err)"

# Hostile config files, each a clear error and exit 2, never a signal, a hang or all memory: a
# device that never ends, a named pipe that no one writes to, a table header of 300,000 parts
# (600 KB: toml++ overflowed the stack on it), and a code point toml++ 3.3 cannot classify in
# a table header; and a task manifest of each kind, named by a config.
python3 -c "print('[' + '.'.join(['a'] * 300000) + ']')" >deep.toml
printf '[a\xcf\x9d.c]\n' >unclassified.toml
mkfifo fifo.toml
for hostile in /dev/zero fifo.toml deep.toml unclassified.toml; do
  (ulimit -v 4000000; timeout 60 "$ks" config --check "$hostile") >out 2>err; rc=$?
  [ "$rc" -eq 2 ] || fail "config --check $hostile: exit $rc, wanted 2: $(head -c 300 err)"
  case $hostile in /*) manifest=$hostile ;; *) manifest=$PWD/$hostile ;; esac
  printf '[campaign]\ntasks = ["%s"]\noutput = "tasks-out"\n' "$manifest" >tasks.toml
  (ulimit -v 4000000; timeout 60 "$ks" config --check tasks.toml) >out 2>err; rc=$?
  [ "$rc" -eq 2 ] || fail "a task manifest $hostile: exit $rc, wanted 2: $(head -c 300 err)"
done
(ulimit -v 4000000; timeout 60 "$ks" config --check /dev/zero) >out 2>err
grep -q '/dev/zero: holds more than 4 MiB, too much for a config file' out \
  || fail "config --check /dev/zero: not said: $(head -c 300 out)"
(ulimit -v 4000000; timeout 60 "$ks" config --check deep.toml) >out 2>err
grep -q 'deep.toml:1:2: a dotted key or table header of more than 64 parts' out \
  || fail "config --check on a deep header: not said: $(head -c 300 out)"
(ulimit -v 4000000; timeout 60 "$ks" config --check unclassified.toml) >out 2>err
grep -q 'unclassified.toml:1:3: a character outside ASCII outside a string or a comment' out \
  || fail "config --check on a code point in a header: not said: $(head -c 300 out)"

if [ "$failures" -ne 0 ]; then
  echo "config_check.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "config_check.sh: all checks passed"
