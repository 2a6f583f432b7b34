#!/usr/bin/env bash
# A whole campaign through the real binary, with the scripted worker in campaign mode standing
# in for the GPU (tests/gpu/scripted_worker.cpp) and tests/actors/fake_nvcc.sh for nvcc:
#   - progress off a terminal is a plain line when it changes (tasks done, candidates planned,
#     compiled, verified, timed, jobs queued, ETA, each GPU's busy share), and each task's
#     result is printed as it ends, before the table;
#   - `status` and `inspect` read the store, as text and as JSON;
#   - a GPU whose stability probes go bad is said to be unstable at once, and given up on;
#   - the first Ctrl-C stops at the next step within seconds, says what it keeps, exits 130,
#     and the same command resumes;
#   - a run that stops before its campaign starts (no GPU) leaves a store that `status` does
#     not mistake for a campaign.
# Usage: campaign.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: campaign.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: campaign.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=1 KS_SCRIPTED_STATE_DIR="$tmp/worker-state"

q="$src/tasks/quickstart"
cat >campaign.toml <<TOML
gpus = [0]
[campaign]
tasks = ["$q/19_relu.toml", "$q/47_sum.toml"]
output = "out"
candidates_per_task = 8
[search]
branches = 2
depth = 3
stop_patience = 2
finalists = 2
[bench]
trials = 1
warmup_ms = 0
max_timing_ms = 1
TOML

# A whole campaign, progress as plain lines every half second.
KS_SCRIPTED_JOB_MS=50 timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0.5 \
  >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "campaign: exit $rc: $(cat out.txt err.txt)"
grep -qE '^\[[0-9]+s\] [0-2]/2 tasks done, candidates: [0-9]+ planned, [0-9]+ compiled, [0-9]+ verified, [0-9]+ timed; [0-9]+ bench jobs queued' err.txt \
  || fail "campaign: no progress line: $(cat err.txt)"
grep -q 'gpu0 (Scripted GPU' err.txt || fail "campaign: no GPU in the progress line: $(cat err.txt)"
grep -q $'\x1b\[' err.txt && fail "campaign: escape sequences off a terminal"
grep -qE '^relu: done: [0-9.]+x its reference' err.txt || fail "campaign: no result line for relu: $(cat err.txt)"
grep -qE '^sum: done' err.txt || fail "campaign: no result line for sum: $(cat err.txt)"
grep -q "against the task's reference kernel" out.txt || fail "campaign: the table does not say what a speedup is measured against: $(cat out.txt)"

# status and inspect, text and JSON.
"$ks" status out >s.out 2>s.err; rc=$?
[ "$rc" -eq 0 ] || fail "status: exit $rc: $(cat s.err)"
grep -q '^relu ' s.out || fail "status: no relu row: $(cat s.out)"
"$ks" status out --json >s.json 2>s.err; rc=$?
[ "$rc" -eq 0 ] || fail "status --json: exit $rc: $(cat s.err)"
python3 - s.json <<'PY' || fail "status --json: not the results document: $(head -c 400 s.json)"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["format"] == "kernelskill-results"
names = sorted(t["name"] for t in doc["tasks"])
assert names == ["relu", "sum"], names
assert all(t["state"] == "done" for t in doc["tasks"])
PY
"$ks" inspect out --json >i.json 2>i.err; rc=$?
[ "$rc" -eq 0 ] || fail "inspect --json: exit $rc: $(cat i.err)"
python3 - i.json <<'PY' || fail "inspect --json: not one object of records: $(head -c 400 i.json)"
import json, sys
doc = json.load(open(sys.argv[1]))
keys = [r["key"] for r in doc["records"]]
assert any(k.startswith("nodes/relu/") for k in keys), keys[:10]
assert all({"key", "database", "summary"} <= set(r) for r in doc["records"])
PY

# A GPU whose stability probes go bad (issue 22): the campaign says so on stderr at once, and
# that it gave up on it; the final summary and `status` warn, and say the results are
# unreliable. (Its probes from the second on take 3x the first; [bench] is the last section.)
sed -e 's|^output = "out"|output = "noisy"|' campaign.toml >noisy.toml
printf 'stability_pause_s = 0.1\nstability_limit_s = 0.5\n' >>noisy.toml
KS_SCRIPTED_NOISY=0:3:2 KS_SCRIPTED_STATE_DIR="$tmp/noisy-state" timeout 300 "$ks" run noisy.toml \
  --worker "$worker" --progress 0 >n.out 2>n.err; rc=$?
[ "$rc" -eq 0 ] || fail "noisy campaign: exit $rc: $(cat n.out n.err)"
grep -qE '^kernelskill: \[[0-9ms]+\] GPU 0 \(Scripted GPU\) is unstable: its probe took 3\.00x its quiet time' n.err \
  || fail "noisy campaign: no line says GPU 0 is unstable: $(cat n.err)"
grep -qE 'GPU 0 \(Scripted GPU\) has been unstable for [0-9.]+s \(bench.stability_limit_s\)' n.err \
  || fail "noisy campaign: no line says it gave up on GPU 0: $(cat n.err)"
grep -q '^warning: GPU 0 (Scripted GPU) was unstable from' n.out \
  || fail "noisy campaign: the summary does not warn: $(cat n.out)"
grep -q '^RESULTS UNRELIABLE' n.out || fail "noisy campaign: the summary does not say unreliable: $(cat n.out)"
"$ks" status noisy >ns.out 2>ns.err; rc=$?
[ "$rc" -eq 0 ] || fail "status of the noisy campaign: exit $rc: $(cat ns.err)"
grep -q '^warning: GPU 0 (Scripted GPU) was unstable from' ns.out \
  || fail "status of the noisy campaign: no warning: $(cat ns.out)"

# Ctrl-C: a campaign with slow jobs, interrupted once; it must stop within seconds.
rm -rf out worker-state
# --foreground: without it timeout passes the signal on to its whole process group as well, so
# kernelskill gets it twice and rightly quits at once ("interrupted again").
# Interrupted once candidates are being verified (the scripted worker logs each job as it starts;
# the reference's verify is the first): nodes are in the store, jobs in flight.
KS_SCRIPTED_LOG="$tmp/jobs.log" KS_SCRIPTED_JOB_MS=400 timeout --foreground 300 "$ks" run campaign.toml \
  --worker "$worker" --progress 0 >out.txt 2>err.txt &
pid=$!
wait_for_lines jobs.log '^verify ' 2 120 "$pid" || fail "interrupted campaign: no candidate verified: $(cat err.txt)"
start=$(date +%s%N)
kill -INT "$pid"
wait "$pid"; rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
[ "$rc" -eq 130 ] || fail "interrupted campaign: exit $rc, wanted 130: $(cat err.txt)"
[ "$took_ms" -lt 3000 ] || fail "interrupted campaign: took $took_ms ms to stop (at most 3000)"
grep -q "stopping at the next step: the jobs in flight finish and are saved" err.txt \
  || fail "interrupted campaign: does not say what it keeps: $(cat err.txt)"
grep -q "every finished step is saved in out/state; run the same command again to resume" err.txt \
  || fail "interrupted campaign: no resume hint: $(cat err.txt)"
"$ks" status out >s.out 2>s.err; rc=$?
[ "$rc" -eq 0 ] || fail "status after an interrupt: exit $rc: $(cat s.err)"
KS_SCRIPTED_JOB_MS=0 timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 \
  >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "resumed campaign: exit $rc: $(cat err.txt)"
grep -q "(resumed)" out.txt || fail "resumed campaign: does not say it resumed: $(cat out.txt)"
! grep -q "with another config" err.txt || fail "the same config resumed is warned about: $(cat err.txt)"
# Resumed under another config, the campaign says that the store's tasks stay in it.
sed 's/^candidates_per_task = 8/candidates_per_task = 9/' campaign.toml >edited.toml
KS_SCRIPTED_JOB_MS=0 timeout 300 "$ks" run edited.toml --worker "$worker" --progress 0 \
  >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "resumed under another config: exit $rc: $(cat err.txt)"
grep -q "holds a campaign started .* with another config: this run resumes it" err.txt \
  || fail "resumed under another config: not said: $(cat err.txt)"

# A full disk under nvcc is the host's fault: the campaign stops after its retries with exit 24
# naming it, no candidate is stored as failed, and the same command on a healthy disk resumes
# and compiles the stopped nodes again. The stand-in nvcc finds the disk full while the marker
# is there, but for the first compile (the reference's); every disk counts as short of space.
rm -rf out worker-state
cat >full-disk.toml <<TOML
gpus = [0]
[campaign]
tasks = ["$q/19_relu.toml"]
output = "out"
candidates_per_task = 4
[search]
branches = 2
depth = 2
finalists = 2
[bench]
trials = 1
warmup_ms = 0
max_timing_ms = 1
host_fault_retries = 1
host_fault_retry_s = 0
min_free_disk_mb = 1e9
TOML
: >disk-full
KS_FAKE_NVCC_FULL_DISK="$tmp/disk-full" KS_FAKE_NVCC_FULL_DISK_SKIP=1 timeout 300 "$ks" run \
  full-disk.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 24 ] || fail "full disk: exit $rc, wanted 24 (host_fault): $(cat err.txt)"
grep -q "stopped by a fault of the host, not of a candidate" err.txt \
  || fail "full disk: the fault is not named: $(cat err.txt)"
grep -q "No space left on device" err.txt || fail "full disk: nvcc's words are not shown: $(cat err.txt)"
"$ks" status out --json >s.json 2>s.err || fail "status after a full disk: $(cat s.err)"
python3 - s.json <<'PY' || fail "full disk: a candidate was stored as failed: $(head -c 600 s.json)"
import json, sys
nodes = json.load(open(sys.argv[1]))["tasks"][0]["nodes"]
assert len(nodes) > 1, nodes
assert all(n["status"] != "compile_failed" and not n.get("failure_kind") for n in nodes), nodes
PY
rm -f disk-full
timeout 300 "$ks" run full-disk.toml --worker "$worker" --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "resumed after a full disk: exit $rc: $(cat err.txt)"
"$ks" status out --json >s.json 2>s.err || fail "status after the resume: $(cat s.err)"
python3 - s.json <<'PY' || fail "resumed after a full disk: $(head -c 600 s.json)"
import json, sys
task = json.load(open(sys.argv[1]))["tasks"][0]
assert task["state"] == "done", task["state"]
assert all(n["status"] in ("accepted", "rejected") for n in task["nodes"]), task["nodes"]
PY

# No GPU: run exits 19 and leaves an empty store; status says so rather than show a table.
rm -rf out
KS_SCRIPTED_DEVICES=0 timeout 60 "$ks" run campaign.toml --worker "$worker" >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 19 ] || fail "no GPU: exit $rc, wanted 19: $(cat err.txt)"
"$ks" status out >s.out 2>s.err; rc=$?
[ "$rc" -eq 2 ] || fail "status after a run without a GPU: exit $rc, wanted 2: $(cat s.out s.err)"
grep -q "stopped before the campaign started" s.err || fail "status after a run without a GPU: $(cat s.err)"

if [ "$failures" -ne 0 ]; then
  echo "campaign.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "campaign.sh: all checks passed"
