#!/usr/bin/env bash
# Runs a Python test with an interpreter that has torch: $KS_PYTHON, else the checkout's
# .venv-torch (scripts/install-torch.sh), else python3. The test itself skips (125) without it.
# Usage: with_torch.sh SOURCE_DIR SCRIPT [ARGS...]
src=${1:?usage: with_torch.sh SOURCE_DIR SCRIPT [ARGS...]}
shift
python=${KS_PYTHON:-}
[ -n "$python" ] || { [ -x "$src/.venv-torch/bin/python" ] && python="$src/.venv-torch/bin/python"; }
[ -n "$python" ] || python=python3
exec "$python" "$@"
