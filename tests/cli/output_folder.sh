#!/usr/bin/env bash
# One run per output folder (issue 27): a second `run` on a folder in use is refused (exit 3)
# naming the process that holds it, and the lock goes with that process, however it ends
# (kill -9 included); a folder that holds something other than a kernelskill output is refused
# (exit 2) and left as it was, unless --overwrite is given. Dry runs stand in for campaigns (no
# GPU): they take the same lock. nvcc is tests/actors/fake_nvcc.sh, slowed down where a run
# must stay alive while the test looks.
# Usage: output_folder.sh KERNELSKILL SOURCE_DIR
set -uo pipefail
ks=${1:?usage: output_folder.sh KERNELSKILL SOURCE_DIR}
src=${2:?usage: output_folder.sh KERNELSKILL SOURCE_DIR}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

fake_nvcc="$src/tests/actors/fake_nvcc.sh"
export KS_NVCC="$fake_nvcc"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
. "$src/tests/cli/wait_for.sh"

q="$src/tasks/quickstart"
config() { # config FILE OUTPUT
  cat >"$1" <<TOML
[campaign]
tasks = ["$q/19_relu.toml"]
output = "$2"
[search]
branches = 2
TOML
}

"$ks" run --help >help.txt 2>&1
grep -q -- '--overwrite' help.txt || fail "run --help does not document --overwrite"
grep -q 'One run at a time per output folder' help.txt || fail "run --help does not say one run per folder"

# A folder of something else: refused (2), named, left as it was.
mkdir mine
echo precious >mine/notes.txt
mkdir mine/data
config mine.toml mine
timeout 120 "$ks" run mine.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 2 ] || fail "foreign folder: exit $rc, wanted 2: $(cat err.txt)"
grep -q 'holds something other than a kernelskill output (data, notes.txt)' err.txt \
  || fail "foreign folder: does not name what it holds: $(cat err.txt)"
grep -q -- '--overwrite' err.txt || fail "foreign folder: does not mention --overwrite: $(cat err.txt)"
[ "$(ls -A mine | sort | tr '\n' ' ')" = "data notes.txt " ] || fail "foreign folder: changed: $(ls -A mine)"

# --overwrite uses it and touches nothing else; the lock file then marks it as ours.
timeout 120 "$ks" run mine.toml --dry-run --overwrite --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "--overwrite: exit $rc, wanted 0: $(cat err.txt)"
[ "$(cat mine/notes.txt)" = precious ] || fail "--overwrite: notes.txt changed"
[ -d mine/data ] || fail "--overwrite: data/ removed"
[ -f mine/.kernelskill.lock ] || fail "--overwrite: no lock file"
timeout 120 "$ks" run mine.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "a folder kernelskill used before: exit $rc, wanted 0: $(cat err.txt)"

# An output of an older version (no lock file, only names a run writes) is ours.
mkdir -p old/state old/best
echo '{}' >old/results.json
config old.toml old
timeout 120 "$ks" run old.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "an older output: exit $rc, wanted 0: $(cat err.txt)"

# A folder in use: a run whose nvcc waits until the test releases it (the file release, at
# most two minutes) holds it; a second run is refused (3), naming the first's pid.
cat >slow_nvcc.sh <<SH
#!/usr/bin/env bash
for a in "\$@"; do [ "\$a" = --version ] && exec "$fake_nvcc" "\$@"; done
for _ in \$(seq 1 2400); do [ -e "$tmp/release" ] || [ ! -d "$tmp" ] && break; sleep 0.05; done
exec "$fake_nvcc" "\$@"
SH
chmod +x slow_nvcc.sh
config busy.toml busy
KS_NVCC="$tmp/slow_nvcc.sh" "$ks" run busy.toml --dry-run --progress 0 --cache-dir slow-cache \
  >first.txt 2>&1 &
first=$!
pids+=("$first")
wait_for_lines busy/.kernelskill.lock "pid $first" 1 120 "$first" \
  || fail "busy: the lock file does not name pid $first"
timeout 60 "$ks" run busy.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 3 ] || fail "busy: the second run: exit $rc, wanted 3: $(cat err.txt)"
grep -q "is in use by another kernelskill process (pid $first on .*a dry run started at" err.txt \
  || fail "busy: does not name the process that holds it: $(cat err.txt)"
kill -0 "$first" 2>/dev/null || fail "busy: the first run ended before the second was refused"
# kill -9 of the holder: the kernel drops the lock, a new run starts at once. Its nvcc, left
# behind, is released.
kill -9 "$first"
wait "$first" 2>/dev/null
touch release
timeout 120 "$ks" run busy.toml --dry-run --progress 0 >out.txt 2>err.txt; rc=$?
[ "$rc" -eq 0 ] || fail "after kill -9 of the holder: exit $rc, wanted 0: $(cat err.txt)"

if [ "$failures" -ne 0 ]; then
  echo "output_folder.sh: $failures check(s) failed" >&2
  exit 1
fi
echo "output_folder.sh: all checks passed"
