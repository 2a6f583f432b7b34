#!/usr/bin/env bash
# Installs, builds and runs every test. Tests that need a GPU report themselves skipped
# (with the reason) where there is none; scripts/gpu-check.sh runs them on a GPU host.
#
# What it downloads, once: the Debian packages of scripts/install-deps.sh, PyTorch from PyPI
# for the importer's tests (scripts/install-torch.sh: a 3 GB download, 4.7 GB in .venv-torch)
# and the LiteLLM proxy (scripts/install-litellm.sh: about 750 MB in .venv-litellm). What it
# keeps between runs, for every clone on the machine: the results the tests cache by content
# ($KS_TEST_CACHE_DIR, default ~/.cache/kernelskill/tests: nvcc's outputs, the emulator's
# shared objects, clang-tidy's and clang-format's clean verdicts), and ccache's objects (the
# build's and the fuzz targets') where ccache is installed. README.md ("Tests") says how long
# it takes with and without them.
#
# ctest runs KS_TEST_JOBS tests at once (default: twice the cores, since most tests wait on
# processes they start); the ones that keep every core busy (the nvcc and emulator spreads,
# the parts of clang-tidy) say so with their PROCESSORS property and share one lock, so they
# run one at a time, first, beside the light ones. Arguments go to ctest (e.g. -R 'cli: ',
# -LE lint).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/build.sh
built=$SECONDS
# PyTorch for the importer's tests (PyPI, a 3 GB download once); without it they skip.
scripts/install-torch.sh || echo "test.sh: torch could not be installed from PyPI; the import tests will skip" >&2
# The independent model server of "cli: llm_litellm_proxy" (PyPI); without it the test skips.
scripts/install-litellm.sh || echo "test.sh: LiteLLM could not be installed from PyPI; the test cli: llm_litellm_proxy will skip" >&2
installed=$SECONDS
# Cache entries no run has used for 30 days go (each cache refreshes what it uses).
cache=${KS_TEST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelskill/tests}
for marker in nvcc/compile:result.json emulator:kernel.so; do
  dir=$cache/${marker%%:*}
  [ -d "$dir" ] || continue
  find "$dir" -mindepth 3 -maxdepth 3 -name "${marker#*:}" -atime +30 -printf '%h\0' |
    xargs -0 -r rm -rf
done
rc=0
ctest --test-dir build --output-on-failure --timeout 600 -j "${KS_TEST_JOBS:-$((2 * $(nproc)))}" \
  "$@" || rc=$?
echo "test.sh: build $((built - start)) s, downloads and installs $((installed - built)) s," \
  "ctest $((SECONDS - installed)) s; $(((SECONDS - start + 30) / 60)) min in all" >&2
exit "$rc"
