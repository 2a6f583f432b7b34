#!/usr/bin/env bash
# `kernelskill import` through the real binary, on our own problem files (tests/tools/
# import_problems, tests/tools/import_user), with torch from .venv-torch or $KS_PYTHON:
#   - a folder: one line per problem, exit 2 because one (a sort) cannot be stated,
#     a manifest per imported problem that `task check` accepts (references compiled), and
#     campaign.toml naming exactly those;
#   - FILE.py:NAME with --input and --init: exit 0;
#   - nn.Dropout: refused in training mode, pointing at --eval, which imports it;
#   - an interpreter without torch: exit 3 and the command that installs it;
#   - a path that does not exist: exit 1.
# Usage: import.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: import.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: import.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

python=${KS_PYTHON:-}
[ -n "$python" ] || { [ -x "$src/.venv-torch/bin/python" ] && python="$src/.venv-torch/bin/python"; }
[ -n "$python" ] || python=python3
"$python" -c "import torch" 2>/dev/null || { echo "no torch for $python (scripts/install-torch.sh): skipped"; exit 125; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export KS_PYTHON="$python"

"$ks" import "$src/tests/tools/import_problems" --out out >stdout.txt 2>stderr.txt; rc=$?
[ "$rc" -eq 2 ] || fail "import of the folder: exit $rc, want 2: $(cat stdout.txt stderr.txt)"
imported=$(grep -c '^imported  ' stdout.txt)
[ "$imported" -eq 20 ] || fail "20 problems imported, got $imported: $(cat stdout.txt)"
grep -q '^not imported  18_sort_unsupported.py: no family states aten.sort' stdout.txt ||
  fail "the sort's reason: $(cat stdout.txt)"
grep -q '^imported  07_linear_gelu: matmul + epilogue$' stdout.txt ||
  fail "the linear layer's line: $(cat stdout.txt)"
grep -q '^imported  19_two_distances_hinge: graph of 2 ops: reduce sum -> reduce mean$' stdout.txt ||
  fail "two sums of one anchor are one reduce: $(cat stdout.txt)"
grep -q '^imported  14_conv3x3_relu: conv + epilogue$' stdout.txt ||
  fail "the convolution's line: $(cat stdout.txt)"
grep -q '^imported  20_rnn_cell_cat: graph of 5 ops: concat -> matmul + epilogue -> elementwise' stdout.txt ||
  fail "the RNN cell's line: $(cat stdout.txt)"
grep -q '^20 of 21 problems imported' stdout.txt || fail "the summary: $(cat stdout.txt)"
grep -q '21 problems not imported\|1 of 21 problems not imported' stderr.txt ||
  fail "stderr says how many were not imported: $(cat stderr.txt)"
listed=$(grep -c '\.toml",$' out/campaign.toml)
[ "$listed" -eq 20 ] || fail "campaign.toml lists 20 manifests, got $listed: $(cat out/campaign.toml)"
[ ! -e out/18_sort_unsupported.toml ] || fail "a manifest was written for the sort"
manifests=(); for m in out/*.toml; do [ "$m" = out/campaign.toml ] || manifests+=("$m"); done
"$ks" task check "${manifests[@]}" >check.txt 2>&1 || fail "task check of the imported manifests: $(cat check.txt)"
[ "$(grep -c '^ok: ' check.txt)" -eq 20 ] || fail "task check: $(cat check.txt)"
"$ks" config --check out/campaign.toml >config.txt 2>&1 || fail "config --check: $(cat config.txt)"

"$ks" import "$src/tests/tools/import_user/my_blocks.py:ScaledResidual" --input 'f32[64,512]' \
  --input 'f32[64,512]' --init '[512]' --out user >user.txt 2>&1; rc=$?
[ "$rc" -eq 0 ] || fail "FILE.py:NAME: exit $rc: $(cat user.txt)"
grep -q '^imported  my_blocks_scaledresidual: elementwise$' user.txt || fail "FILE.py:NAME: $(cat user.txt)"

# A module with nn.Dropout: refused in training mode with the way out, imported with --eval.
printf '%s\n' 'import torch' 'import torch.nn as nn' 'class Model(nn.Module):' \
  '    def __init__(self):' '        super().__init__()' '        self.drop = nn.Dropout(0.2)' \
  '    def forward(self, x):' '        return torch.tanh(self.drop(x))' \
  'def get_inputs():' '    return [torch.rand(32, 256)]' 'def get_init_inputs():' '    return []' \
  >dropout.py
"$ks" import dropout.py --out drop >drop.txt 2>&1; rc=$?
[ "$rc" -eq 2 ] && grep -q 'import with --eval' drop.txt || fail "dropout in training mode: exit $rc: $(cat drop.txt)"
"$ks" import --eval dropout.py --out drop-eval >drop-eval.txt 2>&1; rc=$?
[ "$rc" -eq 0 ] && grep -q '^imported  dropout: elementwise$' drop-eval.txt ||
  fail "dropout with --eval: exit $rc: $(cat drop-eval.txt)"

if ! python3 -c "import torch" 2>/dev/null; then
  "$ks" import "$src/tests/tools/import_problems/01_gelu_tanh.py" --out none --python python3 \
    >none.txt 2>&1; rc=$?
  [ "$rc" -eq 3 ] || fail "python3 without torch: exit $rc, want 3: $(cat none.txt)"
  grep -q 'pip install torch' none.txt || fail "no install command: $(cat none.txt)"
fi

"$ks" import "$tmp/no_such_problem.py" --out missing >missing.txt 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "a missing path: exit $rc, want 1: $(cat missing.txt)"
grep -q 'no_such_problem.py: no such file or folder' missing.txt || fail "$(cat missing.txt)"

[ "$failures" -eq 0 ] || exit 1
echo "import: all checks passed"
