#!/usr/bin/env bash
# A whole campaign through the real binary with the agents on a model: kernelskill run with
# backend openai against ks-fake-model-server (a plausible model; a 429 and a dropped
# connection first), the scripted worker in campaign mode for the GPU and
# tests/actors/fake_nvcc.sh for nvcc. It exits 0, says what the model cost, writes transcripts
# (files, and records of the store that `kernelskill inspect` lists, one per file) and the
# model's usage into results.json, never writes the API key (the store's LMDB file included:
# grep -r reads it), and the skill the model
# distilled from the winner is listed as learned by `kernelskill skills list` and shown with
# its provenance by `skills show`.
# Usage: llm_campaign.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR
set -uo pipefail
ks=${1:?usage: llm_campaign.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
server=${2:?usage: llm_campaign.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
src=${3:?usage: llm_campaign.sh KERNELSKILL FAKE_MODEL_SERVER SOURCE_DIR}
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
export KS_TEST_LLM_CAMPAIGN_KEY="sk-cli-campaign-SECRET-0d4e"

"$server" --api openai --port-file port --faults "1:429,2:drop" --log requests.log &
server_pid=$!
wait_for_file port
port=$(cat port 2>/dev/null)
[ -n "$port" ] || { echo "FAIL: the fake model server did not start" >&2; exit 1; }

. "$src/tests/cli/llm_campaign_config.sh"
llm_campaign_config "$src" openai "http://127.0.0.1:$port/v1" KS_TEST_LLM_CAMPAIGN_KEY 1 >campaign.toml

timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "run: exit $rc, wanted 0: $(cat out.txt err.txt)"
grep -qE '^model: [0-9]+ requests \(2 retries\), [0-9]+ \+ [0-9]+ tokens, cost [0-9.e-]+' out.txt \
  || fail "no model line with 2 retries: $(cat out.txt)"
ls out/transcripts/relu/*-planner-node0.json >/dev/null 2>&1 || fail "no planner transcript: $(ls -R out)"
ls out/transcripts/relu/*-coder-node*.json >/dev/null 2>&1 || fail "no coder transcript: $(ls -R out)"
grep -q '"llm"' out/results.json || fail "results.json has no llm usage: $(head -c 600 out/results.json)"
grep -q "$KS_TEST_LLM_CAMPAIGN_KEY" requests.log || fail "the endpoint never got the key"
# The store keeps every transcript too; inspect shows each as a line of its task and node.
"$ks" inspect out >inspect.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "inspect: exit $rc: $(cat err.txt)"
files=$(find out/transcripts -name '*.json' | wc -l)
records=$(grep -c '^transcripts/' inspect.txt)
[ "$files" -gt 0 ] && [ "$files" -eq "$records" ] \
  || fail "inspect: $records transcript records for $files transcript files: $(grep '^transcripts/' inspect.txt)"
grep -qE $'^transcripts/relu/0/0\ttranscript role=planner model=fake-model outcome=ok tokens=[0-9]+\\+[0-9]+ latency_ms=[0-9.]+ ' inspect.txt \
  || fail "inspect: no summary of the planner's transcript: $(grep '^transcripts/' inspect.txt)"
if grep -rq "$KS_TEST_LLM_CAMPAIGN_KEY" out memory out.txt err.txt; then
  fail "the API key is on disk: $(grep -rl "$KS_TEST_LLM_CAMPAIGN_KEY" out memory out.txt err.txt)"
fi

# The model distilled a skill from the winner; it was validated and stored as learned.
"$ks" skills list --memory memory >list.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "skills list: exit $rc: $(cat err.txt)"
learned=$(awk '$3 == "learned" { print $1 }' list.txt | head -n 1)
[ -n "$learned" ] || fail "skills list shows no learned skill: $(cat list.txt; cat out.txt)"
if [ -n "$learned" ]; then
  "$ks" skills show "$learned" --memory memory >show.txt 2>err.txt \
    || fail "skills show $learned: $(cat err.txt)"
  grep -q 'origin: learned (learned from task relu' show.txt || fail "skills show: no provenance: $(cat show.txt)"
fi

[ "$failures" -eq 0 ] && echo "llm_campaign: ok"
[ "$failures" -eq 0 ]
