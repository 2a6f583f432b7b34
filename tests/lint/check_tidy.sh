#!/usr/bin/env bash
# The ctest "lint: clang-tidy finds nothing": runs clang-tidy (.clang-tidy's checks, every
# warning an error) through run-clang-tidy over our C++ translation units in the build's
# compile_commands.json, and fails on any finding.
#
# Usage: check_tidy.sh SOURCE_DIR BUILD_DIR [FOLDER_REGEX]
# FOLDER_REGEX narrows the run to some of the folders, e.g. 'engine|memory' (all: the default).
# Exits 125 (ctest: skipped, with the reason) where clang-tidy or run-clang-tidy is missing.
#
# The set is every .cpp of ours, tests included; the .cu files are nvcc's, which clang-tidy
# cannot parse with nvcc's flags. Our headers are checked through the files that include them
# (.clang-tidy's HeaderFilterRegex). It takes about 7 minutes on 2 cores, most of them spent
# parsing the CAF headers of actors/ and Catch2's of tests/.
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
runner=$(pick run-clang-tidy-14 run-clang-tidy)
if [ -z "$tidy" ] || [ -z "$runner" ]; then
  echo "skipped: clang-tidy and run-clang-tidy are not installed (scripts/install-deps.sh installs them)"
  exit 125
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check_tidy: $build/compile_commands.json is missing (CMAKE_EXPORT_COMPILE_COMMANDS)" >&2
  exit 1
fi

# run-clang-tidy takes regexes of the files to lint: our folders' .cpp files.
folders=${3:-base|config|engine|memory|json|agents|gpu|actors|cli|benchmarks|tests}
files="^$(printf '%s' "$src" | sed 's/[][\.*^$+?(){}|]/\\&/g')/($folders)/.*\.cpp\$"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS
set +e
"$runner" -p "$build" -quiet -j "$(nproc)" -clang-tidy-binary "$tidy" \
  "$files" >"$log" 2>&1
rc=$?
set -e
# Without the runner's chatter: the command line of every file, colours, warning counts.
sed -e 's/\x1b\[[0-9;]*m//g' "$log" |
  grep -Ev "^$tidy |^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter=|^Error while processing " || true
n=$(grep -c "^$tidy " "$log" || true)
if [ "$rc" -ne 0 ]; then
  echo "check_tidy: clang-tidy found something in the files above ($n files, $((SECONDS - start)) s)"
  exit 1
fi
echo "check_tidy: clang-tidy finds nothing in $n files ($((SECONDS - start)) s)"
