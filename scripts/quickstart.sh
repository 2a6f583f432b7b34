#!/usr/bin/env bash
# Installs, builds, and evaluates every task of the quickstart suite on this machine's GPU:
# each task's reference is compiled, verified against itself and timed, and the table shows
# its time against the roofline floor. Needs an NVIDIA GPU and nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${KS_SKIP_BUILD:-0}" = 1 ] || scripts/build.sh
bin=dist/bin
"$bin/kernelskill" devices
status=0
for manifest in tasks/quickstart/*.toml; do
  ref=$(sed -n 's/^reference *= *"\(.*\)".*/\1/p' "$manifest")
  echo "== $manifest"
  "$bin/kernelskill" eval "$manifest" "$(dirname "$manifest")/$ref" || status=$?
done
exit $status
