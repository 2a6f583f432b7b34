#!/usr/bin/env bash
# `kernelskill run --dry-run` can gate CI: it exits 0 only when every task would run, 2 when a
# reference does not compile (the other tasks still run; a planner or coder that fails is the
# actor tests' case), 1 on a bad --arch. It prints each step as it happens (not at the end), writes the candidates to
# OUTPUT/dry-run/<task>/, keeps no state, and `status OUTPUT` then says what is there. Progress
# is a plain line when stderr is not a terminal, and a display redrawn in place on one.
# nvcc is tests/actors/fake_nvcc.sh (slowed down where the test needs time to look).
# Usage: dry_run.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: dry_run.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: dry_run.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

fake_nvcc="$src/tests/actors/fake_nvcc.sh"
export KS_NVCC="$fake_nvcc"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"

q="$src/tasks/quickstart"
cat >campaign.toml <<TOML
[campaign]
tasks = ["$q/19_relu.toml", "$q/47_sum.toml"]
output = "out"
[search]
branches = 3
TOML

# Every task would run: exit 0, a line per step, the candidates on disk, no state.
timeout 120 "$ks" run campaign.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "dry run: exit $rc, wanted 0: $(cat out.txt err.txt)"
grep -q '^relu: reference compiled for sm_90a' out.txt || fail "dry run: no reference line: $(cat out.txt)"
grep -q '^sum: the planner proposes 3 plans' out.txt || fail "dry run: no planner line: $(cat out.txt)"
grep -qE '^relu: candidate 1 compiled( \(cached\))?: out/dry-run/relu/1_[a-z_]+\.cu [a-z_]+' out.txt \
  || fail "dry run: no candidate line with its file: $(cat out.txt)"
grep -q 'dry run for sm_90a: 2 of 2 tasks would run' out.txt || fail "dry run: no summary: $(cat out.txt)"
[ "$(ls out/dry-run/relu/[0-9]*_*.cu 2>/dev/null | wc -l)" -eq 3 ] || fail "dry run: not 3 candidates in out/dry-run/relu: $(ls -R out)"
# The suites' references are rendered from their family's template: the dry run writes the
# rendered one beside the candidates (nvcc's lines point into it), and only that file else.
[ -s out/dry-run/relu/reference.cu ] || fail "dry run: no rendered reference.cu in out/dry-run/relu: $(ls -R out)"
grep -q 'ks_forward' out/dry-run/relu/reference.cu || fail "dry run: reference.cu is not a kernel: $(head out/dry-run/relu/reference.cu)"
[ "$(ls out/dry-run/relu/*.cu | wc -l)" -eq 4 ] || fail "dry run: other .cu files than 3 candidates and the reference in out/dry-run/relu: $(ls -R out)"
[ -s out/dry-run/summary.txt ] || fail "dry run: no out/dry-run/summary.txt"
[ ! -e out/state ] || fail "dry run: wrote a store (out/state)"

# status after a dry run: no campaign (2), and it says what is there instead.
"$ks" status out >s.out 2>s.err; rc=$?
[ "$rc" -eq 2 ] || fail "status after a dry run: exit $rc, wanted 2"
grep -q "it holds a dry run" s.err || fail "status after a dry run: does not mention it: $(cat s.err)"
grep -q "out/dry-run/summary.txt" s.err || fail "status after a dry run: does not point at the summary: $(cat s.err)"
grep -q "keeps no state" s.err || fail "status after a dry run: $(cat s.err)"

# One task whose reference does not compile: 2, named with nvcc's line, the other task ran.
{ cat "$src/tests/gpu/references/relu_ref.cu"; printf 'KS_FAKE_COMPILE_ERROR\n'; } >broken_ref.cu
lines=$(wc -l <broken_ref.cu)
sed -e 's|name = "relu"|name = "broken"\nreference = "broken_ref.cu"|' "$q/19_relu.toml" >broken.toml
cat >broken-campaign.toml <<TOML
[campaign]
tasks = ["broken.toml", "$q/47_sum.toml"]
output = "out2"
TOML
timeout 120 "$ks" run broken-campaign.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 2 ] || fail "broken reference: exit $rc, wanted 2: $(cat out.txt err.txt)"
grep -q "broken: cannot run: its reference broken_ref.cu does not compile for sm_90a" out.txt \
  || fail "broken reference: not said: $(cat out.txt)"
grep -q "broken_ref.cu:$lines: error" out.txt || fail "broken reference: nvcc's line is not broken_ref.cu:$lines: $(cat out.txt)"
grep -q "1 of 2 tasks would run" out.txt || fail "broken reference: summary: $(cat out.txt)"
grep -q "^sum: the planner proposes" out.txt || fail "broken reference: the other task did not run: $(cat out.txt)"
grep -q "1 task would not run" err.txt || fail "broken reference: stderr: $(cat err.txt)"

# A bad --arch: 1, before anything runs.
timeout 60 "$ks" run campaign.toml --dry-run --arch 90 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 1 ] || fail "--arch 90: exit $rc, wanted 1"

# Lines come as they happen: with a slow nvcc, the reference's line is out long before the end.
# The stand-in for nvcc says it started (nvcc-started), then takes a second; a compile that
# starts once the reference's line is out waits, besides, until the test has seen it (the
# file seen), so that the run is still going when the test looks.
cat >slow_nvcc.sh <<SH
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = --version ] && exec "$fake_nvcc" "\$@"; done
echo started >>"$tmp/nvcc-started"
sleep 1
if grep -q 'reference compiled' "$tmp/out.txt" 2>/dev/null; then
  for _ in \$(seq 1 2400); do [ -e "$tmp/seen" ] || [ ! -d "$tmp" ] && break; sleep 0.05; done
fi
exec "$fake_nvcc" "\$@"
SH
chmod +x slow_nvcc.sh
rm -rf out seen out.txt
KS_NVCC="$tmp/slow_nvcc.sh" timeout 120 "$ks" run campaign.toml --dry-run --progress 0.5 \
  --cache-dir slow-cache >out.txt 2>err.txt &
pid=$!
if wait_for_lines out.txt 'reference compiled' 1 120 "$pid"; then
  kill -0 "$pid" 2>/dev/null || fail "slow dry run: its first line came only at the end"
else
  fail "slow dry run: no 'reference compiled' line: $(cat out.txt err.txt)"
fi
touch seen
wait "$pid"; rc=$?
[ "$rc" -eq 0 ] || fail "slow dry run: exit $rc: $(cat err.txt)"
# Off a terminal: plain lines with counts and an ETA, each different from the one before.
grep -qE '^\[[0-9]+s\] dry run: [0-9]/2 tasks done, [0-9]+ candidates planned, [0-9]+ compiled' err.txt \
  || fail "slow dry run: no progress line: $(cat err.txt)"
grep -q 'ETA <= ' err.txt || fail "slow dry run: no ETA: $(cat err.txt)"
grep -q $'\x1b\[' err.txt && fail "slow dry run: escape sequences off a terminal"
dups=$(sed -E 's/^\[[0-9]+s\] //' err.txt | grep '^dry run:' | uniq -d | wc -l)
[ "$dups" -eq 0 ] || fail "slow dry run: the same progress line twice in a row: $(cat err.txt)"

# Interrupted: it says how many tasks it checked and how many it never reached, not "2 of 2
# would run" (issue 27).
rm -rf out
rm -f nvcc-started
KS_NVCC="$tmp/slow_nvcc.sh" "$ks" run campaign.toml --dry-run --progress 0 --cache-dir int-cache \
  >int.out 2>int.err &
pid=$!
wait_for_file nvcc-started || fail "interrupted dry run: nvcc never started: $(cat int.out int.err)"
kill -INT "$pid"
wait "$pid"; rc=$?
[ "$rc" -eq 130 ] || fail "interrupted dry run: exit $rc, wanted 130: $(cat int.err)"
grep -qE 'dry run for sm_90a: interrupted: [0-1] of 2 tasks checked \([0-1] would run, 0 would not\), [1-2] not reached' int.out \
  || fail "interrupted dry run: does not say what it checked: $(cat int.out)"
grep -q '2 of 2 tasks would run' int.out && fail "interrupted dry run: claims every task would run"

# On a terminal (script(1) gives it one): a display redrawn in place, never the same block
# printed again below the last.
if command -v script >/dev/null; then
  rm -rf out
  KS_NVCC="$tmp/slow_nvcc.sh" script -qfec "timeout 120 '$ks' run campaign.toml --dry-run --cache-dir tty-cache" tty.txt >/dev/null 2>&1; rc=$?
  [ "$rc" -eq 0 ] || fail "dry run on a terminal: exit $rc: $(cat tty.txt)"
  grep -q $'\x1b\[[0-9]*F\x1b\[J' tty.txt || fail "dry run on a terminal: no in-place redraw: $(cat -v tty.txt | head -20)"
  grep -q 'dry run for sm_90a: 2 of 2 tasks would run' tty.txt || fail "dry run on a terminal: no summary"
fi

if [ "$failures" -ne 0 ]; then
  echo "dry_run.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "dry_run.sh: all checks passed"
