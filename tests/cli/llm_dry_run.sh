#!/usr/bin/env bash
# `kernelskill run --dry-run` with a model backend plans and codes one round through the
# endpoint, as it does offline: against ks-fake-model-server (a local plausible model) for both
# APIs, with faults the gateway retries. It exits 0, prints the planner's plans and each
# candidate, writes the candidates and one transcript per request under OUTPUT/dry-run/, never
# writes the API key anywhere, and says what the model cost. An endpoint that does not answer
# makes the task fail (exit 2) after the retries, naming the endpoint.
# nvcc is tests/actors/fake_nvcc.sh.
# Usage: llm_dry_run.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR
set -uo pipefail
ks=${1:?usage: llm_dry_run.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
server=${2:?usage: llm_dry_run.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
src=${3:?usage: llm_dry_run.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_TEST_DRY_RUN_KEY="sk-dry-run-SECRET-5b1e"
tmp=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"
q="$src/tasks/quickstart"

# Starts the fake endpoint speaking $1 with faults $2; sets $port.
start_server() {
  rm -f port
  "$server" --api "$1" --port-file port --faults "$2" --log requests.log &
  server_pid=$!
  wait_for_file port
  port=$(cat port 2>/dev/null)
  [ -n "$port" ] || { fail "the fake model server did not start"; exit 1; }
}
stop_server() {
  kill "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=
}

for api in openai anthropic; do
  rm -f requests.log
  # The first two requests fail (a 429, a dropped connection): the gateway tries them again.
  start_server "$api" "1:429,2:drop"
  cat >campaign.toml <<TOML
[campaign]
tasks = ["$q/19_relu.toml", "$q/47_sum.toml"]
output = "out-$api"
[search]
branches = 2
[agents]
backend = "$api"
endpoint = "http://127.0.0.1:$port/v1"
model = "fake-model"
api_key_env = "KS_TEST_DRY_RUN_KEY"
max_concurrency = 2
retry_base_s = 0.01
prices = [ { model = "fake-model", input_per_mtok = 1.0, output_per_mtok = 2.0 } ]
TOML
  timeout 120 "$ks" run campaign.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
  [ "$rc" -eq 0 ] || fail "$api dry run: exit $rc, wanted 0: $(cat out.txt err.txt)"
  grep -q '^relu: the planner proposes 2 plans' out.txt || fail "$api: no planner line: $(cat out.txt)"
  grep -qE '^sum: candidate 2 compiled( \(cached\))?: out-'"$api"'/dry-run/sum/2_custom\.cu' out.txt \
    || fail "$api: no candidate line: $(cat out.txt)"
  grep -q 'dry run for sm_90a: 2 of 2 tasks would run' out.txt || fail "$api: no summary: $(cat out.txt)"
  grep -qE '^model: [0-9]+ requests \([0-9]+ retries\), [0-9]+ \+ [0-9]+ tokens, cost [0-9.e-]+; transcripts: out-'"$api"'/dry-run/transcripts/' out.txt \
    || fail "$api: no model line: $(cat out.txt)"
  # The candidates are <n>_<plan>.cu; the rendered reference.cu sits beside them, and nothing else.
  [ "$(ls out-$api/dry-run/relu/[0-9]*_*.cu 2>/dev/null | wc -l)" -eq 2 ] || fail "$api: not 2 candidates: $(ls -R out-$api)"
  [ -s "out-$api/dry-run/relu/reference.cu" ] || fail "$api: no rendered reference.cu: $(ls -R out-$api)"
  [ "$(ls out-$api/dry-run/relu/*.cu 2>/dev/null | wc -l)" -eq 3 ] \
    || fail "$api: other .cu files than 2 candidates and the reference: $(ls -R out-$api)"
  # A transcript per request: the planner's and each coder's, per task.
  [ "$(ls out-$api/dry-run/transcripts/relu/*-planner-node0.json 2>/dev/null | wc -l)" -eq 1 ] \
    || fail "$api: no planner transcript: $(ls -R out-$api/dry-run)"
  [ "$(ls out-$api/dry-run/transcripts/sum/*-coder-node*.json 2>/dev/null | wc -l)" -eq 2 ] \
    || fail "$api: not 2 coder transcripts for sum: $(ls -R out-$api/dry-run)"
  [ -s "out-$api/dry-run/llm_usage.json" ] || fail "$api: no llm_usage.json"
  grep -q '"retries":2' "out-$api/dry-run/llm_usage.json" || fail "$api: retries not counted: $(cat out-$api/dry-run/llm_usage.json)"
  # The key went to the endpoint, and nowhere on disk.
  grep -q "$KS_TEST_DRY_RUN_KEY" requests.log || fail "$api: the endpoint never got the key: $(cat requests.log)"
  if grep -rq "$KS_TEST_DRY_RUN_KEY" "out-$api" out.txt err.txt; then
    fail "$api: the API key is on disk: $(grep -rl "$KS_TEST_DRY_RUN_KEY" "out-$api" out.txt err.txt)"
  fi
  stop_server
done

# No endpoint: the planner's request fails after its retries; the task cannot run (exit 2).
cat >down.toml <<TOML
[campaign]
tasks = ["$q/19_relu.toml"]
output = "out-down"
[agents]
backend = "openai"
endpoint = "http://127.0.0.1:9/v1"
model = "fake-model"
max_retries = 1
retry_base_s = 0.01
TOML
timeout 120 "$ks" run down.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 2 ] || fail "endpoint down: exit $rc, wanted 2: $(cat out.txt err.txt)"
grep -q 'the planner failed: .*127.0.0.1:9' out.txt err.txt || fail "endpoint down: does not name the endpoint: $(cat out.txt err.txt)"

# A key variable that is not set: a task error before anything runs, naming the variable.
sed -e 's|max_retries = 1|api_key_env = "KS_TEST_SURELY_UNSET"|' down.toml >unset.toml
timeout 60 "$ks" run unset.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -ne 0 ] || fail "unset key variable: exit 0"
grep -q 'KS_TEST_SURELY_UNSET, which is not set' err.txt || fail "unset key variable: $(cat err.txt)"

[ "$failures" -eq 0 ] && echo "llm_dry_run: ok"
[ "$failures" -eq 0 ]
