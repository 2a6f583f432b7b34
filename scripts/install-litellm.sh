#!/usr/bin/env bash
# Installs the LiteLLM proxy (PyPI: litellm[proxy]) into .venv-litellm (git-ignored) for the
# test "cli: llm_litellm_proxy": our model client against an OpenAI- and Anthropic-compatible
# server written by others. About 750 MB; the test skips, saying so, where it is missing.
# LITELLM_VERSION pins another version than the one this was checked with.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${LITELLM_VERSION:-1.108.7}
if [ -x .venv-litellm/bin/litellm ]; then
  installed=$(.venv-litellm/bin/pip show litellm 2>/dev/null || true)
  [[ $installed == *$'\nVersion: '"$version"$'\n'* ]] && exit 0
fi
if ! dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends python3-venv
fi
python3 -m venv .venv-litellm
.venv-litellm/bin/pip install --quiet --disable-pip-version-check --timeout 30 --retries 2 "litellm[proxy]==$version"
echo "install-litellm.sh: litellm $version in .venv-litellm"
