#!/usr/bin/env bash
# `kernelskill export` through the real binary, on a campaign's output folder that a scripted
# campaign writes here (the scripted worker for the GPU, tests/actors/fake_nvcc.sh for nvcc;
# its winners are real skill renders): no torch needed (tests/tools/ks_export_test.py builds
# and loads a package where torch is).
#   - the package: one op per task with a winner, the reference-only task skipped (and
#     exported when --task names it), the kernels byte for byte, export.json's hashes and
#     GPU, the binding's registrations, a README with each op's speedup and GPU, Python that
#     compiles; a second export into the same folder;
#   - refusals, each with its exit code and what to do: no such folder (1), a typo of --task
#     (1, did you mean), no campaign (2), a dry run only (2), an edited kernel (2), a manifest
#     that moved (2, --manifests finds it), one that states other shapes (2), no winner (2), a
#     folder of the user's as --out (2), one that holds the campaign (1), no Python (3).
# Usage: export.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: export.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: export.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# expect NAME RC PATTERN ARGS...: runs kernelskill ARGS, wants exit RC and PATTERN in its
# output (stdout and stderr).
expect() {
  local name=$1 want=$2 pattern=$3; shift 3
  "$ks" "$@" >out.txt 2>&1; local rc=$?
  [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(cat out.txt)"
  grep -qE -- "$pattern" out.txt || fail "$name: no '$pattern' in: $(cat out.txt)"
}

q="$src/tasks/quickstart"
printf 'gpus = [0]\n[campaign]\ntasks = ["%s", "%s", "%s"]\n' "$q/19_relu.toml" "$q/47_sum.toml" \
  "$q/23_softmax.toml" >campaign.toml
cat "$src/tests/cli/export_campaign.toml" >>campaign.toml
# The scripted worker times a kernel by its KS_ macros (block 128 is the optimum): relu's and
# sum's searches find a faster candidate, softmax's none, so its winner is its reference.
KS_NVCC="$src/tests/actors/fake_nvcc.sh" KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=1 \
  KS_SCRIPTED_STATE_DIR="$tmp/worker-state" KS_SCRIPTED_JOB_MS=5 \
  timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 >run.txt 2>&1 ||
  { echo "FAIL: the scripted campaign: $(cat run.txt)" >&2; exit 1; }

expect "export --help" 0 "--manifests" export --help
for word in OUTPUT_DIR --out --task --name --python "kernelskill::<task>" torch.export \
    "Exit codes" "task error"; do
  grep -qF -- "$word" out.txt || fail "export --help does not mention '$word'"
done

# The package.
expect "export" 0 "^wrote pkg: package pkg, 2 ops" export out --out pkg
grep -qE '^exported  relu as kernelskill::relu: [0-9.]+x its reference, on Scripted GPU' out.txt ||
  fail "export: the relu line: $(cat out.txt)"
grep -qE '^exported  sum as kernelskill::sum' out.txt || fail "export: no sum line: $(cat out.txt)"
grep -qE "^skipped   softmax: no candidate beat its reference; \`--task softmax\`" out.txt ||
  fail "export: softmax is not skipped with its reason: $(cat out.txt)"
for f in setup.py pyproject.toml README.md .kernelskill-export pkg/__init__.py pkg/export.json \
    pkg/_runtime.py pkg/_build.py pkg/_modules.py pkg/_ks_module.py pkg/csrc/ops.cpp \
    pkg/csrc/ks_binding.h pkg/csrc/include/kernelskill/abi.h pkg/kernels/relu.cu \
    pkg/kernels/sum.cu; do
  [ -f "pkg/$f" ] || fail "export: no $f in the package"
done
[ ! -e pkg/pkg/kernels/softmax.cu ] || fail "export: the skipped softmax was written"
cmp -s out/best/relu.cu pkg/pkg/kernels/relu.cu || fail "export: kernels/relu.cu is not best/relu.cu"
cmp -s out/best/sum.cu pkg/pkg/kernels/sum.cu || fail "export: kernels/sum.cu is not best/sum.cu"
python3 - out pkg/pkg <<'PY' || fail "export: export.json does not record the campaign"
import hashlib, json, sys
results = json.load(open(f"{sys.argv[1]}/results.json"))
record = json.load(open(f"{sys.argv[2]}/export.json"))
assert record["format"] == "kernelskill-export" and record["package"] == "pkg", record["format"]
assert sorted(record["ops"]) == ["relu", "sum"], sorted(record["ops"])
winners = {t["name"]: t["winner"] for t in results["tasks"]}
for op, r in record["ops"].items():
    source = open(f"{sys.argv[1]}/best/{op}.cu", "rb").read()
    assert r["sha256"] == hashlib.sha256(source).hexdigest(), op
    assert r["source_hash"] == winners[op]["source_hash"], op
    assert r["measured"]["median_ms"] == winners[op]["median_ms"], op
    assert r["measured"]["gpu"]["name"] == "Scripted GPU", r["measured"]["gpu"]
    assert r["measured"]["gpu"]["driver_version"] > 0
    assert "-gencode=arch=compute_90a,code=sm_90a" in r["nvcc_flags"], r["nvcc_flags"]
    assert r["schema"] == "(Tensor x) -> Tensor", r["schema"]
    assert r["torch"], op
assert record["campaign"]["gpus"][0]["name"] == "Scripted GPU"
assert record["campaign"]["output"].endswith("/out"), record["campaign"]["output"]
assert record["exported_by"].startswith("kernelskill "), record["exported_by"]
PY
grep -qE '^\| `pkg\.relu` \| `torch\.relu\(x\)` \| x: f32\[1024, 2048\] \| [0-9.]+ ms \| [0-9.]+x \|.*\| Scripted GPU \|$' \
  pkg/README.md || fail "README: no relu row with its speedup and GPU: $(grep relu pkg/README.md | head -3)"
if ! grep -q 'TORCH_LIBRARY_IMPL(kernelskill, CUDA, m)' pkg/pkg/csrc/ops.cpp ||
   ! grep -q 'm.impl("sum", &op_sum);' pkg/pkg/csrc/ops.cpp; then
  fail "ops.cpp does not register the ops: $(cat pkg/pkg/csrc/ops.cpp)"
fi
python3 -m py_compile pkg/setup.py pkg/pkg/__init__.py pkg/pkg/_runtime.py pkg/pkg/_build.py \
  pkg/pkg/_modules.py || fail "the package's Python does not compile"

# Again into the folder it wrote, with the reference-only task named.
expect "export --task softmax" 0 "its reference kernel: no candidate beat it" \
  export out --out pkg --task softmax --name soft_ops
if [ ! -f pkg/soft_ops/kernels/softmax.cu ] || [ -e pkg/pkg ]; then
  fail "export --task softmax into the same folder: $(find pkg | head -20)"
fi

# Refusals.
expect "no such folder" 1 "nowhere: no such folder" export nowhere --out p1
expect "typo of --task" 1 "no task 'rleu' in .*did you mean 'relu'" export out --out p1 --task rleu
mkdir -p empty
expect "no campaign" 2 "no campaign's output folder \(no results.json\)" export empty --out p1
mkdir -p dry/dry-run
expect "a dry run only" 2 "holds a dry run only: nothing was measured" export dry --out p1
mkdir -p mine && echo keep >mine/notes.txt
expect "a folder of the user's" 2 "holds files that kernelskill export did not write \(notes.txt\)" \
  export out --out mine
[ -f mine/notes.txt ] || fail "the user's folder was touched"
expect "--out holding the campaign" 1 "--out \. holds the campaign's output folder out" \
  export out --out .
expect "a bad --name" 1 "is no Python package name" export out --out p1 --name 2fast
expect "no Python" 3 "cannot run /nonexistent/python" export out --out p2 --python /nonexistent/python

cp -r out edited
echo "// a comment" >>edited/best/relu.cu
expect "an edited kernel" 2 "is not the kernel the campaign verified for task relu.*status edited --export edited" \
  export edited --out p3 --task relu

cp -r out moved
python3 - moved/results.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for t in doc["tasks"]:
    t["manifest"] = "/elsewhere/tasks/" + t["manifest"].rsplit("/", 1)[1]
json.dump(doc, open(sys.argv[1], "w"))
PY
expect "a manifest that moved" 2 "is not here.*--manifests DIR" export moved --out p4
expect "--manifests" 0 "^wrote p4: package p4, 2 ops" export moved --out p4 --manifests "$q"
mkdir -p reshaped
sed 's/shape = \[1024, 2048\]/shape = [512, 2048]/g' "$q/19_relu.toml" >reshaped/19_relu.toml
expect "a manifest of other shapes" 2 "no longer states the task the campaign tuned" \
  export moved --out p5 --task relu --manifests reshaped

cp -r out nowinner
python3 - nowinner/results.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for t in doc["tasks"]:
    t["winner"] = None
json.dump(doc, open(sys.argv[1], "w"))
PY
expect "no winner" 2 "^  relu: no winner yet \(state done" export nowinner --out p6
expect "no winner, named" 2 "task relu has no winner yet" export nowinner --out p6 --task relu

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "ok"
