#!/usr/bin/env bash
# A damaged or lost store is reported, never a crash, and never silently started over (issue
# 27). A campaign through the real binary (the scripted worker and tests/actors/fake_nvcc.sh
# standing in for the GPU and nvcc), then its store damaged in three ways:
#   - data.mdb cut short: status, inspect and run exit 5 with "is damaged: it is N bytes, its
#     index says M", never a signal (LMDB maps the file: reading past its end was a SIGBUS);
#     run --overwrite starts over, keeping the store as state.damaged/;
#   - one byte of a node record changed: status, inspect (text and JSON) and run exit 5 naming
#     nodes/relu/1 and its checksum; inspect still lists every other record;
#   - the store deleted or emptied beside the results: run refuses (exit 2) naming --overwrite,
#     writes nothing, and starts over with it; status says what happened;
# and the skill memory cut short: its commands and run exit 5, saying to move it aside; and a
# campaign whose reference is not UTF-8 is stored, resumed and inspected as any other.
# Usage: store_damage.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: store_damage.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: store_damage.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=1 KS_SCRIPTED_STATE_DIR="$tmp/worker-state"
export KS_SCRIPTED_JOB_MS=0

cat >campaign.toml <<TOML
gpus = [0]
[campaign]
tasks = ["$src/tasks/quickstart/19_relu.toml"]
output = "out"
candidates_per_task = 4
[search]
branches = 2
depth = 2
stop_patience = 1
finalists = 2
[bench]
trials = 1
warmup_ms = 0
max_timing_ms = 1
[memory]
path = "mem"
TOML

# expect CODE NAME ARGS...: runs kernelskill ARGS, wants exit CODE (a signal would be 128 + n);
# the output is in out.txt and err.txt.
expect() {
  local code=$1 name=$2; shift 2
  timeout 300 "$ks" "$@" >out.txt 2>err.txt; local rc=$?
  [ "$rc" -eq "$code" ] || fail "$name: exit $rc, wanted $code: $(head -c 2000 err.txt)"
}
# said NAME TEXT: err.txt holds TEXT (fixed string).
said() { grep -qF -- "$2" err.txt || fail "$1: does not say '$2': $(head -c 2000 err.txt)"; }

expect 0 "campaign" run campaign.toml --worker "$worker" --progress 0
[ -f out/results.json ] || fail "campaign: no results.json"
cp -a out pristine
results_sum=$(md5sum <out/results.json)
restore() { rm -rf out; cp -a pristine out; }
results_kept() {
  [ "$(md5sum <out/results.json)" = "$results_sum" ] || fail "$1: results.json was changed"
}

# -- data.mdb cut short ---------------------------------------------------------------------
size=$(stat -c %s out/state/data.mdb)
half=$((size / 2))
[ "$half" -gt 8192 ] || fail "the store is too small to cut in half past its header pages ($size bytes)"
truncate -s "$half" out/state/data.mdb
for cmd in status inspect; do
  expect 5 "$cmd of a store cut short" "$cmd" out
  said "$cmd of a store cut short" "the store out/state/data.mdb is damaged: it is $half bytes, its index says $size"
  said "$cmd of a store cut short" "kernelskill run CONFIG.toml --overwrite"
done
expect 5 "run on a store cut short" run campaign.toml --worker "$worker" --progress 0
said "run on a store cut short" "out/state/data.mdb is damaged: it is $half bytes, its index says $size"
said "run on a store cut short" "results.json, report.md, report.html, best/ in $tmp/out hold the campaign as it was last reported"
said "run on a store cut short" "--overwrite"
results_kept "run on a store cut short"
[ "$(stat -c %s out/state/data.mdb)" -eq "$half" ] || fail "run on a store cut short wrote into it"
expect 0 "run --overwrite on a store cut short" run campaign.toml --worker "$worker" --progress 0 --overwrite
said "run --overwrite on a store cut short" "the damaged store was moved to $tmp/out/state.damaged/"
[ "$(stat -c %s out/state.damaged/data.mdb)" -eq "$half" ] || fail "run --overwrite did not keep the damaged store"
expect 0 "status after starting over" status out

# -- one byte of a record changed -------------------------------------------------------------
restore
python3 - out/state/data.mdb <<'PY' || fail "could not change node 1's record"
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
# Every copy of node 1's record (copy-on-write leaves stale ones in freed pages): its parent,
# 0, becomes 1 -- still a valid record, only the checksum tells.
anchor = b'"type":"node","id":1,"parent":0'
count = 0
at = data.find(anchor)
while at >= 0:
    data[at + len(anchor) - 1] = ord("1")
    count += 1
    at = data.find(anchor, at + 1)
assert count > 0, "node 1 not found"
open(path, "wb").write(data)
PY
expect 5 "status of a changed record" status out
said "status of a changed record" "nodes/relu/1: damaged: its checksum does not match its contents"
said "status of a changed record" "kernelskill inspect out"
expect 5 "inspect of a changed record" inspect out
grep -qP '^nodes/relu/1\tdamaged: its checksum does not match' out.txt \
  || fail "inspect does not mark nodes/relu/1 damaged: $(cat out.txt)"
grep -qP '^nodes/relu/0\tnode id=0' out.txt || fail "inspect does not list the other records: $(cat out.txt)"
said "inspect of a changed record" "1 of its"
said "inspect of a changed record" "nodes/relu/1: damaged"
expect 5 "inspect --json of a changed record" inspect out --json
python3 - out.txt <<'PY' || fail "inspect --json does not mark nodes/relu/1 alone damaged, in one object that says it failed: $(head -c 600 out.txt)"
import json, sys
doc = json.load(open(sys.argv[1]))
records = doc["records"]
damaged = [r["key"] for r in records if r["damaged"]]
assert damaged == ["nodes/relu/1"], damaged
assert len(records) > 5
assert doc["ok"] is False and doc["failure"]["exit_code"] == 5, doc.get("failure")
assert doc["failure"]["kind"] == "damaged store", doc["failure"]
PY
expect 5 "run on a changed record" run campaign.toml --worker "$worker" --progress 0
said "run on a changed record" "nodes/relu/1: damaged: its checksum does not match its contents"
said "run on a changed record" "--overwrite"
results_kept "run on a changed record"

# -- the store deleted or emptied beside the results --------------------------------------------
restore
rm -rf out/state
expect 2 "run with the store deleted" run campaign.toml --worker "$worker" --progress 0
said "run with the store deleted" "holds a campaign's results (results.json, report.md, report.html, best/) but not the store they came from"
said "run with the store deleted" "pass --overwrite"
[ ! -e out/state ] || fail "run with the store deleted created one"
results_kept "run with the store deleted"
expect 2 "status with the store deleted" status out
said "status with the store deleted" "the store they came from was deleted or emptied"
mkdir -p out/state && : >out/state/data.mdb
expect 2 "run with the store emptied" run campaign.toml --worker "$worker" --progress 0
said "run with the store emptied" "out/state/data.mdb is empty (0 bytes)"
[ "$(stat -c %s out/state/data.mdb)" -eq 0 ] || fail "run with the store emptied wrote into it"
results_kept "run with the store emptied"
expect 0 "run --overwrite with the store emptied" run campaign.toml --worker "$worker" --progress 0 --overwrite
expect 0 "status after starting over" status out

# -- the skill memory cut short -----------------------------------------------------------------
restore
msize=$(stat -c %s mem/data.mdb)
truncate -s $((msize / 2)) mem/data.mdb
expect 5 "skills list on a memory cut short" skills list --memory mem
said "skills list on a memory cut short" "the skill memory mem/data.mdb is damaged: it is $((msize / 2)) bytes, its index says $msize"
said "skills list on a memory cut short" "move it aside (mv mem mem.damaged)"
expect 5 "run with a memory cut short" run campaign.toml --worker "$worker" --progress 0
said "run with a memory cut short" "is damaged: it is $((msize / 2)) bytes"

# -- a reference that is not UTF-8 ---------------------------------------------------------------
# A hand-written reference with a Latin-1 comment: its source and nvcc's quote of it were
# stored as they were and read back as "not JSON", so the run could not write its outputs
# (exit 3) and every later command called the store damaged (exit 5). Now the campaign ends,
# resumes and is inspected, and the winner's source keeps the reference's bytes.
mkdir latin1 && cd latin1 || exit 1
"$ks" task new myop --family custom --shape 64,64 --dir t >/dev/null || fail "task new failed"
printf '// r\xe9f\xe9rence, Latin-1\n' >>t/myop_ref.cu
sed -e 's|^tasks = .*|tasks = ["t/myop.toml"]|' ../campaign.toml >campaign.toml
expect 0 "a Latin-1 reference's campaign" run campaign.toml --worker "$worker" --progress 0
expect 0 "inspect after a Latin-1 reference" inspect out
grep -q 'corrupt' out.txt && fail "inspect after a Latin-1 reference: $(grep corrupt out.txt | head -3)"
expect 0 "resuming after a Latin-1 reference" run campaign.toml --worker "$worker" --progress 0
best=$(find out/best -name '*.cu' | head -1)
[ -n "$best" ] || fail "a Latin-1 reference's campaign: no best/*.cu"
[ -z "$best" ] || LC_ALL=C grep -q $'r\xe9f\xe9rence' "$best" \
  || fail "a Latin-1 reference's campaign: the winner $best lost the reference's bytes"
cd .. || exit 1

if [ "$failures" -ne 0 ]; then
  echo "store_damage.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "store_damage.sh: all checks passed"
