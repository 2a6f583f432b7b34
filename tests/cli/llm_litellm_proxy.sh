#!/usr/bin/env bash
# The model client against a server we did not write: a whole campaign through `kernelskill run`
# with each API (OpenAI chat completions, Anthropic messages) on the LiteLLM proxy, an
# independent implementation of both, which forwards every request to ks-fake-model-server
# (a plausible model) in the same API. The campaign exits 0, every request the proxy answered
# has its transcript in the folder and in the store, the tokens of results.json are the sum
# of the transcripts', and our API key is on no disk (the proxy holds its own upstream key).
#
# Skips (exit 125) where LiteLLM is not installed: scripts/install-litellm.sh installs it
# into .venv-litellm, which this test finds; KS_LITELLM names another `litellm` executable.
# Usage: llm_litellm_proxy.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR
set -uo pipefail
ks=${1:?usage: llm_litellm_proxy.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
server=${2:?usage: llm_litellm_proxy.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
src=${3:?usage: llm_litellm_proxy.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
ks=$(realpath "$ks") server=$(realpath "$server") src=$(realpath "$src")
. "$src/tests/cli/llm_campaign_config.sh"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

litellm=${KS_LITELLM:-}
[ -z "$litellm" ] && [ -x "$src/.venv-litellm/bin/litellm" ] && litellm=$src/.venv-litellm/bin/litellm
[ -z "$litellm" ] && litellm=$(command -v litellm || true)
if [ -z "$litellm" ]; then
  echo "SKIP: LiteLLM is not installed (scripts/install-litellm.sh installs it into .venv-litellm)"
  exit 125
fi
worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  [ -n "${KS_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=1 KS_SCRIPTED_JOB_MS=0
export KS_TEST_LITELLM_KEY="sk-litellm-client-SECRET-51c2"
# The proxy reaches for no network: its model price map from the package, no telemetry.
export LITELLM_LOCAL_MODEL_COST_MAP=True LITELLM_TELEMETRY=False

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

for api in openai anthropic; do
  mkdir "$api" && cd "$api" || exit 1
  export KS_SCRIPTED_STATE_DIR="$tmp/$api/worker-state"
  "$server" --api "$api" --port-file upstream-port --log upstream.log &
  pids+=($!)
  wait_for_file upstream-port
  upstream=$(cat upstream-port 2>/dev/null)
  [ -n "$upstream" ] || { fail "$api: the fake model server did not start"; cd ..; continue; }
  base=http://127.0.0.1:$upstream
  [ "$api" = openai ] && base=$base/v1
  port=$(free_port)
  cat >proxy.yaml <<YAML
model_list:
  - model_name: fake-model
    litellm_params:
      model: $api/fake-model
      api_base: $base
      api_key: upstream-key
litellm_settings:
  num_retries: 0
general_settings:
  dangerously_permit_weak_or_unset_master_key: true
YAML
  "$litellm" --config proxy.yaml --host 127.0.0.1 --port "$port" >proxy.log 2>&1 &
  pids+=($!)
  up=0
  for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$port/health/liveliness" >/dev/null 2>&1 && { up=1; break; }
    sleep 0.5
  done
  [ "$up" = 1 ] || { fail "$api: the LiteLLM proxy did not start: $(tail -5 proxy.log)"; cd ..; continue; }

  llm_campaign_config "$src" "$api" "http://127.0.0.1:$port/v1" KS_TEST_LITELLM_KEY 2 >campaign.toml
  timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 >out.txt 2>err.txt
  rc=$?
  [ "$rc" -eq 0 ] || fail "$api: run: exit $rc, wanted 0: $(cat out.txt err.txt | tail -20)"
  grep -qE '^model: [0-9]+ requests \(0 retries\), [0-9]+ \+ [0-9]+ tokens' out.txt \
    || fail "$api: no model line without retries: $(grep '^model' out.txt)"
  ls out/transcripts/relu/*-planner-node0.json >/dev/null 2>&1 || fail "$api: no planner transcript"
  ls out/transcripts/relu/*-coder-node*.json >/dev/null 2>&1 || fail "$api: no coder transcript"

  # Every request reached the model through the proxy, as its transcript says: as many
  # completions upstream as transcripts, each ok; results.json's tokens are their sum.
  path=/v1/chat/completions
  [ "$api" = anthropic ] && path=/v1/messages
  # The fake server appends its log every 50 ms: wait for a line per transcript (the check
  # below fails if more came).
  transcripts=$(find out/transcripts -name '*.json' | wc -l)
  wait_for_lines upstream.log " $path " "$transcripts" 30
  upstream_requests=$(grep -c " $path " upstream.log)
  python3 - out "$upstream_requests" "$api" <<'PY' || fail "$api: accounting (above)"
import glob, json, sys
out, upstream, api = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ts = [json.load(open(f)) for f in glob.glob(out + "/transcripts/**/*.json", recursive=True)]
bad = [t["id"] for t in ts if t["outcome"] != "ok" or t["api"] != api or len(t["attempts"]) != 1]
tokens = (sum(t["input_tokens"] for t in ts), sum(t["output_tokens"] for t in ts))
llm = json.load(open(out + "/results.json"))["llm"]
seen = (llm.get("input_tokens"), llm.get("output_tokens"))
problems = []
if not ts or len(ts) != upstream:
    problems.append(f"{len(ts)} transcripts for {upstream} requests upstream")
if bad:
    problems.append(f"transcripts not ok in one attempt through {api}: {bad}")
if tokens[0] <= 0 or tokens[1] <= 0 or seen != tokens or llm.get("requests") != len(ts):
    problems.append(f"results.json llm {llm} against transcripts' {len(ts)} requests, tokens {tokens}")
for p in problems:
    print(f"FAIL: {api}: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
  "$ks" inspect out >inspect.txt 2>inspect.err || fail "$api: inspect: $(cat inspect.err)"
  files=$(find out/transcripts -name '*.json' | wc -l)
  records=$(grep -c '^transcripts/' inspect.txt)
  [ "$files" -gt 0 ] && [ "$files" -eq "$records" ] \
    || fail "$api: $records transcript records in the store for $files files"
  grep -q "upstream-key" upstream.log || fail "$api: the proxy did not forward with its own key"
  if grep -rq "$KS_TEST_LITELLM_KEY" out memory out.txt err.txt upstream.log; then
    fail "$api: our API key is on disk or went upstream: $(grep -rl "$KS_TEST_LITELLM_KEY" out memory out.txt err.txt upstream.log)"
  fi
  [ "$failures" -eq 0 ] && echo "$api through LiteLLM: $files requests, $(grep '^model' out.txt)"
  cd ..
done

[ "$failures" -eq 0 ] && echo "llm_litellm_proxy: ok"
[ "$failures" -eq 0 ]
