#!/usr/bin/env bash
# A mistyped command line is a usage error (exit 1) that says what is wrong and suggests what
# was meant, before anything runs: an unknown command ("rn"), an unknown option of a command
# ("config --default"), an option given before its command, an unknown command with --help, a
# numeric option out of bounds; `kernelskill help [COMMAND]` prints help and exits 0.
# Usage: usage.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: usage.sh KERNELSKILL SOURCE_DIR}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# expect CODE 'ARGS' WORDS...: runs kernelskill ARGS (split on spaces), wants exit CODE and
# every WORD somewhere in stdout + stderr.
expect() {
  local code=$1 args=$2; shift 2
  local out rc
  # shellcheck disable=SC2086
  out=$("$ks" $args 2>&1); rc=$?
  [ "$rc" -eq "$code" ] || fail "'kernelskill $args': exit $rc, wanted $code: $out"
  for word in "$@"; do
    grep -qF -- "$word" <<<"$out" || fail "'kernelskill $args' does not say '$word': $out"
  done
}

# Commands.
expect 1 "" "a command is required" "run, status" "--help"
expect 1 "rn" "unknown command 'rn'" "did you mean 'run'?" "kernelskill --help"
expect 1 "stauts out" "did you mean 'status'?"
expect 1 "benchmark --help" "unknown command 'benchmark'"
out=$("$ks" benchmark --help 2>/dev/null)
[ -z "$out" ] || fail "'kernelskill benchmark --help' printed help on stdout: $out"
expect 1 "task" "task: a subcommand is required: check, new" "kernelskill task --help"
expect 1 "task chek x.toml" "unknown command 'chek'" "did you mean 'check'?"

# Options.
expect 1 "--frobnicate" "unknown option '--frobnicate'"
expect 1 "config --default" "unknown option '--default'" "did you mean '--defaults'?" \
  "kernelskill config --help"
expect 1 "run --dryrun c.toml" "did you mean '--dry-run'?"
expect 1 "run --progres 5 c.toml" "did you mean '--progress'?"
expect 1 "--dry-run run c.toml" "it is an option of kernelskill run" "after the command"
expect 1 "eval --dry-run t.toml c.cu" "it is an option of kernelskill run"
expect 1 "status a b" "not expected"

# Bounds: a short message naming the bounds and the unit, never a 300-digit number.
expect 1 "run --progress -1 c.toml" "--progress: must be from 0 to 3600 seconds, not -1"
expect 1 "run --progress 1e9 c.toml" "must be from 0 to 3600 seconds"
expect 1 "run --progress abc c.toml" "must be a number"
expect 1 "eval --trials 0 t.toml c.cu" "--trials: must be from 1 to 100000 trials"
expect 1 "eval --job-timeout -5 t.toml c.cu" "--job-timeout"
expect 1 "task new x --shape 0,4" "--shape"
out=$("$ks" run --progress -1 c.toml 2>&1)
[ "${#out}" -lt 200 ] || fail "--progress -1: the message is ${#out} characters long: $out"

# help.
expect 0 "help" "Subcommands" "run" "status" "task" "Exit codes"
expect 0 "help run" "--dry-run" "--progress" "Exit codes"
expect 0 "help task new" "--family" "--shape"
expect 0 "help task check" "--no-compile"
expect 1 "help rn" "did you mean 'run'?"
expect 1 "help task chek" "did you mean 'check'?"
out=$("$ks" help run 2>&1)
grep -q '^Usage: kernelskill run ' <<<"$out" || fail "'help run' has no 'Usage: kernelskill run' line: $out"

if [ "$failures" -ne 0 ]; then
  echo "usage.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "usage.sh: all checks passed"
