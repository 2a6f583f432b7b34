#!/usr/bin/env bash
# Installs the Debian packages (if missing), configures and builds into build/, and installs
# a relocatable tree into dist/ (bin/, include/, share/) that can be carried to a GPU host.
# Where ccache is installed, compiles go through it (KS_CCACHE=0: not), with the checkout as its
# base_dir and the working directory left out of the key, so that a fresh clone of the same
# sources, in any folder, recompiles only what changed (the debug information of a reused object
# names the folder of the clone that compiled it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
launcher=
if [ "${KS_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  launcher="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_C_COMPILER_LAUNCHER="$launcher" -DCMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
  -DCMAKE_CUDA_COMPILER_LAUNCHER="$launcher" >/dev/null
cmake --build build --parallel "${JOBS:-$(nproc)}"
cmake --install build --prefix dist --strip >/dev/null  # stripped: the tree is carried to GPU hosts
