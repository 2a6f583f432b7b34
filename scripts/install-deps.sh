#!/usr/bin/env bash
# Installs the Debian 12 packages kernelskill builds against. Idempotent: packages already
# present are skipped, and apt-get update runs only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  python3                          # the build's include check (cmake/check_includes.py)
  libcaf-dev                       # CAF 0.17.6: actors
  libboost1.81-dev libboost-json1.81-dev
  liblmdb-dev libcurl4-openssl-dev
  libtomlplusplus-dev libcli11-dev catch2 libexpected-dev
  libxxhash-dev                    # content keys of the compile cache (header-only use)
  libkainjow-mustache-dev          # Mustache for skill templates (header-only)
  bubblewrap                       # bench.sandbox = true: the bench worker inside bwrap
  clang-format clang-tidy          # the lint tests (tests/lint/): format and clang-tidy, v14
  clang libclang-rt-14-dev         # the fuzz tests (tests/fuzz/): libFuzzer, ASan, UBSan
  python3-html5lib                 # the report's tests: report.html parsed strictly
  chromium                         # the report's tests: report.html opened headless
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  if [[ " ${missing[*]} " == *" chromium "* ]]; then
    echo "install-deps: installing chromium for the report's browser test (about 100 MB to" \
         "download, 350 MB installed)" >&2
  fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "install-deps: the CUDA 13 toolkit is not at /usr/local/cuda (nvcc missing)." >&2
  echo "install-deps: install it from NVIDIA's packages; kernelskill needs nvcc, cudart, NVRTC and CUPTI." >&2
  exit 1
fi
# The sandbox tests skip (saying why) where bwrap cannot make namespaces: say it here too.
if ! bwrap --ro-bind / / --unshare-net true 2>/dev/null; then
  echo "install-deps: bwrap is installed but cannot make a sandbox on this host;" \
       "bench.sandbox = true will not work here (the sandbox tests skip)" >&2
fi
echo "install-deps: all packages present"
