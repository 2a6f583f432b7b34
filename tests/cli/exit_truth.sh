#!/usr/bin/env bash
# Exit codes that tell the truth (issue 27): `run` fails (exit 3) when the campaign's outputs
# (results.json, report.md) could not be written, and when every model request of the run
# failed, instead of printing a table and exiting 0. The scripted worker in campaign mode stands
# in for the GPU, ks-fake-model-server for the model, tests/actors/fake_nvcc.sh for nvcc.
# Usage: exit_truth.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR
set -uo pipefail
ks=${1:?usage: exit_truth.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
server=${2:?usage: exit_truth.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
src=${3:?usage: exit_truth.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }
tmp=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=1 KS_SCRIPTED_STATE_DIR="$tmp/worker-state"
export KS_SCRIPTED_JOB_MS=0

. "$src/tests/cli/llm_campaign_config.sh"

# results.json cannot be written (a folder holds its name): exit 3, saying so, not 0.
llm_campaign_config "$src" offline "" "" 1 >outputs.toml
mkdir -p out/results.json/blocked
timeout 300 "$ks" run outputs.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 3 ] || fail "unwritable results.json: exit $rc, wanted 3: $(cat out.txt err.txt)"
grep -q "outputs could not be written" err.txt || fail "unwritable results.json: not said: $(cat err.txt)"
# Once writable, the same command resumes and exits 0.
rm -rf out/results.json
timeout 300 "$ks" run outputs.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "writable again: exit $rc, wanted 0: $(cat err.txt)"
[ -s out/results.json ] || fail "writable again: no results.json"

# Every model request fails (the endpoint refuses the key: 401, final): exit 3, naming the last
# error, not a table of "1.00x" and 0.
"$server" --api openai --port-file port --faults "$(seq -s, -f '%g:401' 1 50)" &
server_pid=$!
wait_for_file port
port=$(cat port 2>/dev/null)
[ -n "$port" ] || { echo "FAIL: the fake model server did not start" >&2; exit 1; }
export KS_TEST_EXIT_TRUTH_KEY=refused-key
mkdir model
llm_campaign_config "$src" openai "http://127.0.0.1:$port/v1" KS_TEST_EXIT_TRUTH_KEY 1 >model/campaign.toml
(cd model && timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0) >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 3 ] || fail "no model answers: exit $rc, wanted 3: $(cat out.txt err.txt)"
grep -q "every model request of this run failed" err.txt \
  || fail "no model answers: not said: $(cat err.txt)"
grep -q "HTTP 401: invalid api key" err.txt || fail "no model answers: the last error is not named: $(cat err.txt)"

if [ "$failures" -ne 0 ]; then
  echo "exit_truth.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "exit_truth.sh: all checks passed"
