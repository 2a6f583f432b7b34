#!/usr/bin/env bash
# Installs, builds and runs every test. Tests that need a GPU report themselves skipped
# (with the reason) where there is none; scripts/gpu-check.sh runs them on a GPU host.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
# PyTorch for the importer's tests (PyPI, a 3 GB download once); without it they skip.
scripts/install-torch.sh || echo "test.sh: torch could not be installed from PyPI; the import tests will skip" >&2
# The independent model server of "cli: llm_litellm_proxy" (PyPI); without it the test skips.
scripts/install-litellm.sh || echo "test.sh: LiteLLM could not be installed from PyPI; the test cli: llm_litellm_proxy will skip" >&2
ctest --test-dir build --output-on-failure --timeout 600 "$@"
