#!/usr/bin/env bash
# The ctest "lint: every source is clang-format clean": runs clang-format --dry-run --Werror
# with the repository's .clang-format over every C++ and CUDA source of ours (sources.sh) and
# fails naming each file that is not formatted; `clang-format -i FILE` fixes one.
#
# Usage: check_format.sh SOURCE_DIR
# Exits 125 (ctest: skipped, with the reason) where clang-format 14 is missing: other majors
# lay out some constructs differently, so their verdict would not be the one CI gives.
set -euo pipefail
src=$(cd "$1" && pwd)
here=$(dirname "$0")
# shellcheck source=sources.sh
source "$here/sources.sh"

want_major=14
tool=""
for candidate in "clang-format-$want_major" clang-format; do
  if command -v "$candidate" >/dev/null; then
    version=$("$candidate" --version)
    if [[ $version =~ version\ $want_major\. ]]; then
      tool=$candidate
      break
    fi
  fi
done
if [ -z "$tool" ]; then
  echo "skipped: clang-format $want_major is not installed (scripts/install-deps.sh installs it);" \
       "the sources are formatted by that version"
  exit 125
fi

mapfile -t files < <(lint_sources "$src")
if ((${#files[@]} == 0)); then
  echo "check_format: found no sources under $src" >&2
  exit 1
fi

bad=()
cd "$src"
for f in "${files[@]}"; do
  "$tool" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not clang-format clean:"
  printf '  %s\n' "${bad[@]}"
  echo "check_format: fix each with: $tool -i FILE (the first difference: below)"
  "$tool" --style=file --dry-run "${bad[0]}" 2>&1 | head -20
  exit 1
fi
echo "check_format: ${#files[@]} files are clang-format clean ($tool)"
