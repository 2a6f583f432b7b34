#!/usr/bin/env bash
# The ctest "lint: clang-tidy finds nothing": runs clang-tidy (.clang-tidy's checks, every
# warning an error) over our C++ translation units in the build's compile_commands.json, and
# fails on any finding.
#
# Usage: check_tidy.sh SOURCE_DIR BUILD_DIR [FOLDER_REGEX [EXCLUDE_REGEX [SHARD]]]
# FOLDER_REGEX narrows the run to some of the folders, e.g. 'engine|memory' (all: the default),
# and EXCLUDE_REGEX leaves out the folders it matches, e.g. 'tests/(actors|agents)'; both match
# paths relative to SOURCE_DIR. SHARD "I/N" checks the I-th of every N files, in path order.
# ctest runs it in parts (tests/CMakeLists.txt).
# Exits 125 (ctest: skipped, with the reason) where clang-tidy is missing.
#
# The set is every .cpp of ours, tests included; the .cu files are nvcc's, which clang-tidy
# cannot parse with nvcc's flags. Our headers are checked through the files that include them
# (.clang-tidy's HeaderFilterRegex). A file is checked only where no clean result for its
# content is cached (tidy_cached.py: the key is the file as the preprocessor expands it, its
# flags, .clang-tidy and the clang-tidy version), in $KS_TEST_CACHE_DIR/tidy (default
# ${XDG_CACHE_HOME:-~/.cache}/kernelskill/tests; KS_TEST_CACHE_DIR=none checks every file).
# Every file costs about 7 minutes on 2 cores, most of them spent parsing the CAF headers of
# actors/ and Catch2's of tests/; with every file cached, about half a minute.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)

pick() {  # the first of the given commands that exists
  for c in "$@"; do
    if command -v "$c" >/dev/null; then
      command -v "$c"
      return
    fi
  done
}
tidy=$(pick clang-tidy-14 clang-tidy)
if [ -z "$tidy" ]; then
  echo "skipped: clang-tidy is not installed (scripts/install-deps.sh installs it)"
  exit 125
fi
# The preprocessor of the cache's key: clang++ of clang-tidy's own version.
major=$("$tidy" --version | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -1)
clangxx=$(pick "clang++-$major" clang++)
cache=${KS_TEST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelskill/tests}
if [ -z "$clangxx" ]; then
  echo "check_tidy: no clang++ to preprocess with: every file is checked, nothing cached"
  clangxx=clang++
  cache=none
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check_tidy: $build/compile_commands.json is missing (CMAKE_EXPORT_COMPILE_COMMANDS)" >&2
  exit 1
fi

folders=${3:-base|config|engine|memory|json|report|agents|gpu|campaign|actors|cli|benchmarks|tests}
exec python3 "$(dirname "$0")/tidy_cached.py" "$src" "$build" "$tidy" "$clangxx" "$folders" \
  "$cache" "$(nproc)" "${4:-}" "${5:-}"
