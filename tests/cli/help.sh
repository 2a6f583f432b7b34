#!/usr/bin/env bash
# Every command's --help exits 0 and names its options and defaults, and lists only the exit
# codes that command can return (the main --help lists them all); descriptions are wrapped;
# --version prints the version, the commit, the CUDA toolkit and the default architecture; a
# bad command line is a usage error (exit 1) that points at --help.
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

# expect_codes NAME ARGS... -- CODES...: the "Exit codes:" section of ARGS's output lists
# exactly CODES.
expect_codes() {
  local name=$1; shift
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  local listed wanted
  listed=$("$ks" "${args[@]}" 2>&1 | sed -n '/^Exit codes:/,$p' | grep -oE '^  [0-9]+ ' | tr -d ' ' | tr '\n' ' ')
  wanted="$* "
  [ "$listed" = "$wanted" ] || fail "$name: lists exit codes '$listed', wanted '$wanted'"
}

expect_help "kernelskill --help" --help -- run status report inspect config devices eval task help \
  --version "Exit codes" "19" "130"
expect_help "kernelskill run --help" run --help -- \
  CONFIG.toml --dry-run --arch --worker --cache-dir "<output>/cache" --progress "=5" \
  results.json report.md "best/<task>.cu" resume "Exit codes" "no_device" "130" "task error" \
  "dry-run/<task>/"
expect_help "kernelskill status --help" status --help -- OUTPUT_DIR --json --export "Exit codes"
expect_help "kernelskill inspect --help" inspect --help -- OUTPUT_DIR --json "Exit codes"
expect_help "kernelskill report --help" report --help -- OUTPUT_DIR report.html \
  "dry-run/report.html" "Exit codes"
expect_help "kernelskill config --help" config --help -- --defaults --check FILE "FILE:LINE:COL" \
  "campaign.tasks" "Exit codes"
expect_help "kernelskill devices --help" devices --help -- \
  --json --recalibrate --cache-dir --worker "calibration" "Exit codes" "no_device"
expect_help "kernelskill eval --help" eval --help -- \
  TASK.toml CANDIDATE.cu --json --arch --trials "=3" --seed "=20261126" --no-time \
  --cache-dir --device --worker --job-timeout --allow-vendor-libraries "Exit codes" "compile_error" \
  "wrong_result" "vendor_library" "task error"
expect_help "kernelskill task --help" task --help -- check new "Exit codes"
expect_help "kernelskill task check --help" task check --help -- TASK.toml --no-compile --arch \
  "FILE:LINE:COL" "Exit codes"
expect_help "kernelskill task new --help" task new --help -- NAME --family --dir --shape --force \
  "Exit codes"

# Each command lists the codes it can return, not the whole table.
expect_codes "kernelskill --help" --help -- 0 1 2 3 5 11 12 13 14 15 16 17 18 19 20 21 22 23 24 130
expect_codes "run --help" run --help -- 0 1 2 3 5 15 17 19 20 22 24 130
expect_codes "eval --help" eval --help -- 0 1 2 3 11 12 13 14 15 16 17 18 19 20 21 22 23 24
expect_codes "devices --help" devices --help -- 0 1 13 14 15 17 19 20 21 22
expect_codes "status --help" status --help -- 0 1 2 3 5
expect_codes "inspect --help" inspect --help -- 0 1 2 3 5
expect_codes "report --help" report --help -- 0 1 2 3 5
expect_codes "config --help" config --help -- 0 1 2
expect_codes "task check --help" task check --help -- 0 1 2 3
expect_codes "task new --help" task new --help -- 0 1 3
expect_codes "help --help" help --help -- 0 1

# Wrapped: no line of any help page is wider than 100 columns.
for args in "--help" "run --help" "status --help" "inspect --help" "report --help" "config --help" \
            "devices --help" "eval --help" "task --help" "task check --help" "task new --help"; do
  # shellcheck disable=SC2086
  widest=$("$ks" $args | awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }')
  [ "$widest" -le 100 ] || fail "'kernelskill $args': a line of $widest columns (at most 100)"
done

out=$("$ks" --version 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "--version: exit $rc, wanted 0"
grep -qE '^kernelskill [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}|^kernelskill [0-9]+\.[0-9]+\.[0-9]+ \(commit unknown' <<<"$out" \
  || fail "--version does not name the commit: '$out'"
grep -q 'built with CUDA [0-9]' <<<"$out" || fail "--version does not name the CUDA toolkit: '$out'"
grep -q '^nvcc: ' <<<"$out" || fail "--version does not say which nvcc compiles: '$out'"
grep -q 'sm_90a' <<<"$out" || fail "--version does not name the default architecture: '$out'"

# Usage errors: exit 1, with a hint.
for args in "" "frobnicate" "eval" "eval --trials 0 a.toml b.cu" "devices --bogus" "run" \
            "run --progress -1 c.toml" "status" "config --check" "rn" "benchmark --help" \
            "task" "help rn"; do
  out=$("$ks" $args 2>&1); rc=$?
  [ "$rc" -eq 1 ] || fail "'kernelskill $args': exit $rc, wanted 1 (usage error)"
  grep -q -- "--help" <<<"$out" || fail "'kernelskill $args' does not point at --help: $out"
done

if [ "$failures" -ne 0 ]; then
  echo "help.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "help.sh: all checks passed"
