# Sourced by the lint scripts: `lint_sources SOURCE_DIR` prints, one per line and relative to
# SOURCE_DIR, every C++ and CUDA source of ours that the format check covers. In a git checkout
# these are the tracked and the untracked-but-not-ignored files (git ls-files), else whatever a
# find sees in the same folders. Skill templates (skills/, families/) are data, not sources.
lint_folders=(base config engine memory json report agents gpu campaign actors cli benchmarks tests tools)

# Kept byte for byte as kernelskill rendered it (the file says so): not reformatted.
lint_verbatim='^tests/gpu/matmul_candidates/tf32x3_wgmma_4096\.cu$'

lint_sources() {
  local dir=$1
  (
    cd "$dir" || exit 1
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
      git ls-files --cached --others --exclude-standard -- "${lint_folders[@]}"
    else
      find "${lint_folders[@]}" -type f 2>/dev/null
    fi
  ) | grep -E '\.(cpp|hpp|cu|cuh|h)$' | grep -Ev "$lint_verbatim" | sort -u |
    while read -r f; do [ -f "$dir/$f" ] && printf '%s\n' "$f"; done
}
