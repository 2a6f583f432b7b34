#!/usr/bin/env bash
# `kernelskill eval --sandbox` never runs a candidate unsandboxed: without bubblewrap it stops
# before compiling, exit 3 (environment), saying how to install it or run without the flag.
# With bubblewrap and a host that allows its namespaces, --sandbox --arch compiles and stops
# at the missing GPU like an unsandboxed eval does (or passes where there is a GPU). No GPU.
# Usage: eval_sandbox.sh KERNELSKILL SOURCE_DIR [without-bwrap|with-bwrap]
# ctest runs the two halves as two tests; with-bwrap exits 125 (skipped) where bubblewrap is
# missing or the host forbids its namespaces. Without the third argument, both run.
set -uo pipefail
ks=${1:?usage: eval_sandbox.sh KERNELSKILL SOURCE_DIR [without-bwrap|with-bwrap]}
src=${2:?usage: eval_sandbox.sh KERNELSKILL SOURCE_DIR [without-bwrap|with-bwrap]}
part=${3:-both}
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
task="$src/tasks/quickstart/19_relu.toml"
# The suites are family manifests with rendered references; the candidate is the hand-written
# relu reference that the GPU tests compare the rendered one with (any correct relu will do).
candidate="$src/tests/gpu/references/relu_ref.cu"
[ -f "$candidate" ] || { echo "eval_sandbox: no candidate kernel at $candidate" >&2; exit 1; }

if [ "$part" != with-bwrap ]; then
  # No bwrap in PATH: exit 3 and what to do. (Nothing else is looked up in PATH before it.)
  PATH=/nonexistent "$ks" eval "$task" "$candidate" --arch sm_90a --cache-dir cache --sandbox \
    >out 2>err
  rc=$?
  [ "$rc" -eq 3 ] || fail "without bwrap: exit $rc, wanted 3 ($(cat err))"
  grep -qF -- "--sandbox but bubblewrap is not installed" err \
    || fail "without bwrap: stderr does not say bubblewrap is missing: $(cat err)"
  grep -qF "apt-get install bubblewrap" err || fail "without bwrap: no install hint: $(cat err)"
  [ ! -d cache ] || fail "without bwrap: it compiled anyway"
fi

if [ "$part" = without-bwrap ]; then
  :
elif ! command -v bwrap >/dev/null || ! bwrap --ro-bind / / --unshare-net true 2>/dev/null; then
  [ "$failures" -eq 0 ] || exit 1
  echo "eval_sandbox: skipped: bwrap missing or not allowed here; the sandboxed run is not checked"
  exit 125
else
  rm -rf cache
  "$ks" eval "$task" "$candidate" --arch sm_90a --cache-dir cache --sandbox >out 2>err
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "eval_sandbox: a GPU is present; the sandboxed eval passed" >&2
  else
    [ "$rc" -eq 19 ] || fail "sandboxed, no GPU: exit $rc, wanted 19 (no_device): $(cat err)"
    grep -qi "no CUDA device" err || fail "sandboxed, no GPU: stderr: $(cat err)"
  fi
fi

[ "$failures" -eq 0 ] || exit 1
echo "eval_sandbox: ok"
