#!/usr/bin/env bash
# Installs, builds, and runs the quickstart campaign on this machine's GPUs: for each of the
# eight ops of tasks/quickstart, a tree search over candidate kernels, every one compiled,
# verified against the reference and timed (about half a minute on one H100 once built).
# Results, the best kernels and the report land in kernelskill-out/quickstart/; running it
# again resumes an interrupted campaign. Needs an NVIDIA GPU and nvcc. Extra arguments go to
# `kernelskill run`: without a GPU, `scripts/quickstart.sh --dry-run` compiles the
# references and plans, codes and compiles one round of each task.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${KS_SKIP_BUILD:-0}" = 1 ] || scripts/build.sh
bin=dist/bin
exec "$bin/kernelskill" run configs/quickstart.toml "$@"
