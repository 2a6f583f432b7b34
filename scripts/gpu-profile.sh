#!/usr/bin/env bash
# The profile check of issue 12, on a GPU host, from a carried install tree: each planted
# kernel of tests/gpu/profile/ (README.md there) profiled with `kernelskill profile --json`,
# its diagnosed class against the class it was planted as, the DRAM bytes counted for the
# plain copy against the bytes it must move (within 2%), and what profiling each candidate
# cost (the profile job with its round trip, under 3 s); and, beside the verdict, whether each
# planted candidate verifies against its task (`eval --no-time`). Prints a short table last;
# exits 0 when every row passes, 1 otherwise.
#
#   scripts/gpu-profile.sh [DIST]      DIST defaults to dist/ (holds bin/kernelskill)
#
# Each candidate's JSON (the format of tests/engine/profiles/, to record fixtures from) and
# its text report go to $OUT (the device tool's folder) or out/profile/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
dist=$(realpath "${1:-dist}")
out=${OUT:-out/profile}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
ks=$dist/bin/kernelskill
[ -x "$ks" ] || { echo "gpu-profile.sh: no $ks (build and install first)" >&2; exit 2; }
planted=tests/gpu/profile
cache=${KS_PROFILE_CACHE:-$out/cache}  # compiled kernels and the device's calibration
limit_ms=3000                           # profiling one candidate costs less than this
bytes_tolerance=0.02                    # the plain copy's DRAM bytes against cost.bytes

# name | task | candidate | planted class ("-": not a class check, the plain copy's bytes)
cases=(
  "uncoalesced_copy|copy_256m.toml|uncoalesced_copy.cu|memory"
  "strided_reread|strided_sum.toml|strided_reread.cu|cache"
  "register_heavy|row_sum.toml|register_heavy.cu|occupancy"
  "tiny_launches|copy_rows.toml|tiny_launches.cu|launch"
  "fma_loop|affine.toml|fma_loop.cu|compute"
  "roofline_copy|copy_2g.toml|roofline_copy.cu|at_roofline"
  "plain_copy|copy_2g.toml|copy_ref.cu|-"
)

command -v nvidia-smi >/dev/null &&
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
for c in "${cases[@]}"; do
  IFS='|' read -r name task candidate expected <<< "$c"
  echo "=== $name ($candidate on $task, planted as $expected)"
  t0=$(date +%s%N)
  "$ks" profile --json --cache-dir "$cache" "$planted/$task" "$planted/$candidate" \
    > "$out/$name.json" 2> "$out/$name.err"
  rc=$?
  t1=$(date +%s%N)
  echo "$rc $(( (t1 - t0) / 1000000 ))" > "$out/$name.rc"
  # The text form, as a user sees it (the per-kernel table and the diagnosis), kept beside.
  "$ks" profile --cache-dir "$cache" "$planted/$task" "$planted/$candidate" \
    > "$out/$name.txt" 2>> "$out/$name.err"
  grep -v '^$' "$out/$name.txt" | sed -n '1,12p'
  [ "$rc" = 0 ] || { echo "exit $rc:"; tail -5 "$out/$name.err"; }
  # Planted kernels are correct candidates: verified against the task's reference (not part
  # of the verdict, which is about the profile).
  "$ks" eval --no-time --cache-dir "$cache" "$planted/$task" "$planted/$candidate" \
    > "$out/$name.eval" 2>&1
  echo $? >> "$out/$name.rc"
done

python3 - "$out" "$limit_ms" "$bytes_tolerance" "${cases[@]}" <<'EOF'
import json, sys
out, limit_ms, tolerance = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rows, failures, notes = [], 0, []
for case in sys.argv[4:]:
    name, task, candidate, expected = case.split('|')
    rc, wall_ms, eval_rc = (open(f"{out}/{name}.rc").read().split() + ["?"])[:3]
    try:
        r = json.load(open(f"{out}/{name}.json"))
    except Exception as e:
        r = {"error": f"no JSON ({e})"}
    d = r.get("diagnosis") or {}
    p = r.get("profile") or {}
    h = d.get("hardware") or {}
    got = d.get("bound") or ("-" if not r.get("ok") else "undiagnosed")
    profile_ms = (r.get("phases_ms") or {}).get("profile", -1)
    worker_ms = p.get("profile_ms", -1)
    checks = []
    if expected != "-":
        checks.append(got == expected)
    fast = r.get("ok", False) and 0 <= profile_ms < limit_ms
    checks.append(fast)
    bytes_text = "-"
    need = (r.get("cost") or {}).get("bytes", 0)
    if "dram_bytes" in h and need > 0:
        ratio = h["dram_bytes"] / need
        bytes_text = f"{h['dram_bytes'] / 2**30:.3f}/{need / 2**30:.3f} GiB ({100 * (ratio - 1):+.1f}%)"
        if expected == "-":
            checks.append(abs(ratio - 1) <= tolerance)
    elif expected == "-":
        checks.append(False)  # the plain copy's bytes must be counted
    if not r.get("ok", False):
        notes.append(f"{name}: exit {rc}: {r.get('error', '?').splitlines()[0] if r.get('error') else '?'}")
    elif not p.get("counters", False):
        notes.append(f"{name}: no counters ({p.get('counters_unavailable', '?')})")
    ok = all(checks)
    failures += not ok
    rows.append((name, expected, got, "pass" if ok else "FAIL", bytes_text,
                 f"{profile_ms / 1000:.2f}" if r.get("ok") and profile_ms >= 0 else "-",
                 f"{worker_ms / 1000:.2f}" if worker_ms >= 0 else "-",
                 f"{float(wall_ms) / 1000:.1f}",
                 "yes" if eval_rc == "0" else f"no (exit {eval_rc})"))
head = ("kernel", "planted", "diagnosed", "result", "DRAM bytes counted/needed",
        "profile s", "worker s", "command s", "verified")
widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
print()
print("profile check: the planted class diagnosed; the plain copy's DRAM bytes within "
      f"{100 * tolerance:.0f}%; profiling a candidate (the profile job and its round trip) "
      f"under {limit_ms / 1000:.0f} s")
for row in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
for n in notes:
    print("note:", n)
print(f"{len(rows) - failures} of {len(rows)} pass")
sys.exit(1 if failures else 0)
EOF
