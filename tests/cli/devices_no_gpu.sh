#!/usr/bin/env bash
# On a machine without a GPU, `kernelskill devices` and `kernelskill run` say so clearly and
# exit with the no_device code (19), `devices` in text and in JSON, and neither crashes nor
# hangs.
# Usage: devices_no_gpu.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: devices_no_gpu.sh KERNELSKILL SOURCE_DIR}
no_device_exit=19
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

if [ -e /dev/nvidia0 ] || { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }; then
  echo "devices_no_gpu.sh: skipped: this machine has a GPU (/dev/nvidia0 or nvidia-smi -L)"
  exit 125
fi
worker="$(dirname "$ks")/ks-bench-worker"
if [ ! -x "$worker" ]; then
  echo "FAIL: no bench worker at $worker: build the ks-bench-worker target" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

timeout 60 "$ks" devices --cache-dir "$tmp/cache" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq "$no_device_exit" ] || fail "devices: exit $rc, wanted $no_device_exit (no_device)"
grep -q "no CUDA device" "$tmp/err" || fail "devices: stderr lacks 'no CUDA device': $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "devices: printed results although there is no device: $(cat "$tmp/out")"

timeout 60 "$ks" devices --json --cache-dir "$tmp/cache" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq "$no_device_exit" ] || fail "devices --json: exit $rc, wanted $no_device_exit"
grep -q '"kind": "no_device"' "$tmp/out" || fail "devices --json: no no_device failure in: $(cat "$tmp/out")"
grep -q '"ok": false' "$tmp/out" || fail "devices --json: no \"ok\": false in: $(cat "$tmp/out")"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" \
    || fail "devices --json: stdout is not one JSON object"
fi

# A worker that is not there: a clear message, the crash code, no hang.
timeout 60 "$ks" devices --worker "$tmp/no-such-worker" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 17 ] || fail "devices --worker missing: exit $rc, wanted 17 (crash)"
grep -q "cannot start the bench worker" "$tmp/err" || fail "devices --worker missing: $(cat "$tmp/err")"

# `run` on this machine: the same no_device code and a hint at --dry-run; with a worker that is
# not there, the crash code. The code comes from the failure's kind, not from its message.
src=${2:?usage: devices_no_gpu.sh KERNELSKILL SOURCE_DIR}
cat >"$tmp/campaign.toml" <<CONFIG
gpus = "all"
[campaign]
tasks = ["$src/tasks/quickstart/19_relu.toml"]
output = "campaign-out"
[memory]
path = "memory"
CONFIG
timeout 60 "$ks" run "$tmp/campaign.toml" --progress 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq "$no_device_exit" ] || fail "run: exit $rc, wanted $no_device_exit (no_device): $(cat "$tmp/err")"
grep -q "no CUDA device" "$tmp/err" || fail "run: stderr lacks 'no CUDA device': $(cat "$tmp/err")"
grep -q -- "--dry-run" "$tmp/err" || fail "run: stderr lacks the --dry-run hint: $(cat "$tmp/err")"
timeout 60 "$ks" run "$tmp/campaign.toml" --progress 0 --worker "$tmp/no-such-worker" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 17 ] || fail "run --worker missing: exit $rc, wanted 17 (crash): $(cat "$tmp/err")"
grep -q "cannot start the bench worker" "$tmp/err" || fail "run --worker missing: $(cat "$tmp/err")"

if [ "$failures" -ne 0 ]; then
  echo "devices_no_gpu.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "devices_no_gpu.sh: all checks passed"
