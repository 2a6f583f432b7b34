#!/usr/bin/env bash
# Installs the Debian packages (if missing), configures and builds into build/, and installs
# a relocatable tree into dist/ (bin/, include/, share/) that can be carried to a GPU host.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build build --parallel "${JOBS:-$(nproc)}"
cmake --install build --prefix dist --strip >/dev/null  # stripped: the tree is carried to GPU hosts
