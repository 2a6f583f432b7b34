#!/usr/bin/env bash
# Installs PyTorch from PyPI into .venv-torch (git-ignored) for `kernelskill import` and its
# tests: the importer traces modules on the meta device, so no GPU is needed, but PyPI's Linux
# wheel brings CUDA's libraries with it: about 4.7 GB on disk, a 3 GB download, said on screen
# before it starts. Skipped when .venv-torch already holds the pinned version (pip's cache keeps
# the wheels for a reinstall). TORCH_VERSION pins another version than the one checked with
# (2.11.0, as on the GPU hosts).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${TORCH_VERSION:-2.11.0}
if [ -x .venv-torch/bin/python ] &&
   .venv-torch/bin/python -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$version')" 2>/dev/null; then
  exit 0
fi
if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends python3-venv
fi
echo "install-torch.sh: installing torch $version from PyPI into .venv-torch (a 3 GB download, 4.7 GB on disk; once)" >&2
python3 -m venv .venv-torch
.venv-torch/bin/pip install --quiet --disable-pip-version-check --timeout 60 --retries 3 "torch==$version" numpy
echo "install-torch.sh: torch $version in .venv-torch" >&2
