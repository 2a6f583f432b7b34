#!/usr/bin/env bash
# The ctest "lint: every source is clang-format clean": runs clang-format --dry-run --Werror
# with the repository's .clang-format over every C++ and CUDA source of ours (sources.sh) and
# fails naming each file that is not formatted; `clang-format -i FILE` fixes one.
#
# Usage: check_format.sh SOURCE_DIR
# Exits 125 (ctest: skipped, with the reason) where clang-format 14 is missing: other majors
# lay out some constructs differently, so their verdict would not be the one CI gives.
#
# One clang-format per core; a file is checked only where no clean result for its content is
# cached: the key hashes the clang-format version, every .clang-format of the repository, the
# file's path and its content, in $KS_TEST_CACHE_DIR/format (default
# ${XDG_CACHE_HOME:-~/.cache}/kernelskill/tests; KS_TEST_CACHE_DIR=none checks every file).
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

cd "$src"
cache=${KS_TEST_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelskill/tests}
[ "$cache" = none ] || cache=$cache/format
# The key's base: the tool's version and every .clang-format (its path and content).
base=$({
  "$tool" --version
  git ls-files --cached --others --exclude-standard -- '*.clang-format' 2>/dev/null ||
    find . -name .clang-format -not -path './.git/*'
} | sort -u | while read -r line; do
  printf '%s\n' "$line"
  if [ -f "$line" ]; then sha256sum "$line"; fi
done | sha256sum | cut -d' ' -f1)
# The files with no clean result cached, each with its cache entry ("-": none), the cached
# ones touched (used: kept by the pruning below).
todo=()
declare -A key_of=()
while IFS=$'\t' read -r f entry; do
  todo+=("$f")
  key_of[$f]=$entry
done < <(sha256sum "${files[@]}" | python3 -c '
import hashlib, os, sys
cache, base = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    digest, path = line.rstrip("\n").split("  ", 1)
    if cache == "none":
        print(f"{path}\t-")
        continue
    key = hashlib.sha256(f"{base}\0{path}\0{digest}".encode()).hexdigest()
    entry = os.path.join(cache, key[:2], key)
    try:
        os.utime(entry)
    except OSError:
        print(f"{path}\t{entry}")
' "$cache" "$base")
# The files not cached clean, one clang-format per core; those it passes are cached clean.
clean=$(mktemp)
trap 'rm -f "$clean"' EXIT
if ((${#todo[@]})); then
  printf '%s\0' "${todo[@]}" |
    xargs -0 -r -n 4 -P "$(nproc)" sh -c \
      'tool=$1; shift; for f; do "$tool" --style=file --dry-run --Werror "$f" >/dev/null 2>&1 && printf "%s\n" "$f"; done' \
      sh "$tool" >"$clean" || true
fi
bad=()
for f in "${todo[@]}"; do
  if grep -qxF -- "$f" "$clean"; then
    if [ "${key_of[$f]}" != - ]; then
      mkdir -p "$(dirname "${key_of[$f]}")"
      : >"${key_of[$f]}"
    fi
  else
    bad+=("$f")
  fi
done
if [ "$cache" != none ] && [ -d "$cache" ]; then
  find "$cache" -type f -mtime +30 -delete 2>/dev/null || true
fi
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not clang-format clean:"
  printf '  %s\n' "${bad[@]}"
  echo "check_format: fix each with: $tool -i FILE (the first difference: below)"
  "$tool" --style=file --dry-run "${bad[0]}" 2>&1 | head -20
  exit 1
fi
echo "check_format: ${#files[@]} files are clang-format clean ($tool; $((${#files[@]} - ${#todo[@]})) of them clean in the cache)"
