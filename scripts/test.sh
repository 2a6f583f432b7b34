#!/usr/bin/env bash
# Installs, builds and runs every test. Tests that need a GPU report themselves skipped
# (with the reason) where there is none; scripts/gpu-check.sh runs them on a GPU host.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure --timeout 600 "$@"
