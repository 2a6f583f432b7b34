#!/usr/bin/env bash
# Every command's --help exits 0 and names its options, defaults and exit codes; --version
# prints the version; a bad command line is a usage error (exit 1).
# Usage: help.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: help.sh KERNELSKILL SOURCE_DIR}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# expect_help NAME ARGS... -- WORDS...: runs ARGS, wants exit 0 and every WORD in stdout.
expect_help() {
  local name=$1; shift
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  local out rc
  out=$("$ks" "${args[@]}" 2>&1); rc=$?
  [ "$rc" -eq 0 ] || fail "$name: exit $rc, wanted 0"
  for word in "$@"; do
    grep -qF -- "$word" <<<"$out" || fail "$name: the output does not mention '$word'"
  done
}

expect_help "kernelskill --help" --help -- run status inspect config devices eval --version \
  "Exit codes" "19" "130"
expect_help "kernelskill run --help" run --help -- \
  CONFIG.toml --dry-run --arch --worker --cache-dir "<output>/cache" --progress "=5" \
  results.json report.md "best/<task>.cu" resume "Exit codes" "no_device" "130" "task error"
expect_help "kernelskill status --help" status --help -- OUTPUT_DIR "Exit codes"
expect_help "kernelskill inspect --help" inspect --help -- OUTPUT_DIR "Exit codes"
expect_help "kernelskill config --help" config --help -- --defaults --check FILE "FILE:LINE:COL" \
  "Exit codes"
expect_help "kernelskill devices --help" devices --help -- \
  --json --recalibrate --cache-dir --worker "calibration" "Exit codes" "no_device"
expect_help "kernelskill eval --help" eval --help -- \
  TASK.toml CANDIDATE.cu --json --arch --trials "=3" --seed "=20261126" --no-time \
  --cache-dir --device --worker --job-timeout "Exit codes" "compile_error" "wrong_result" "task error"

out=$("$ks" --version 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "--version: exit $rc, wanted 0"
grep -qE '^kernelskill [0-9]+\.[0-9]+\.[0-9]+' <<<"$out" || fail "--version printed '$out'"

# Usage errors: exit 1, with a hint.
for args in "" "frobnicate" "eval" "eval --trials 0 a.toml b.cu" "devices --bogus" "run" \
            "run --progress -1 c.toml" "status" "config --check"; do
  out=$("$ks" $args 2>&1); rc=$?
  [ "$rc" -eq 1 ] || fail "'kernelskill $args': exit $rc, wanted 1 (usage error)"
  grep -q -- "--help" <<<"$out" || fail "'kernelskill $args' does not point at --help: $out"
done

if [ "$failures" -ne 0 ]; then
  echo "help.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "help.sh: all checks passed"
