#!/usr/bin/env bash
# The noise check (issue 22): a short campaign on a GPU made noisy on purpose. ks-gpu-noise
# competes for GPU 0 in bursts (4 s of heavy kernels, 3 s idle) while a campaign of two
# quickstart tasks runs there for about a minute; then, with the noise stopped, each winner is
# timed against its reference again. Run by scripts/gpu-check.sh (step noise-check), on a GPU
# host, from a carried install tree:
#
#   scripts/gpu-noise-check.sh [DIST]        DIST defaults to dist/
#
# It checks, and says PASS or FAIL for each:
#   1. the campaign reports the unstable GPU within a minute of its start (a progress line
#      "GPU 0 (...) is unstable: ...");
#   2. its results carry the warning (results.json's "warnings" and "gpu_stability", with an
#      episode on GPU 0);
#   3. no winner is slower than its reference: by the campaign's own final, and re-timed on the
#      quiet GPU (kernelskill eval, speedup at least 0.95: the eval's own noise).
# Exits 0 when all pass, 1 otherwise (2: the noise maker or the campaign could not run).
# Everything it wrote is under $OUT/noise-check (or out/noise-check).
set -uo pipefail
cd "$(dirname "$0")/.."
dist=$(realpath "${1:-dist}")
out=$(realpath -m "${OUT:-out}/noise-check")
rm -rf "$out"
mkdir -p "$out"
ks="$dist/bin/kernelskill"
noise_bin="$dist/bin/ks-gpu-noise"
export PATH=/usr/local/cuda/bin:$PATH KS_INCLUDE_DIR=${KS_INCLUDE_DIR:-$dist/include}
noise_pid=
stop_noise() {
  if [ -n "$noise_pid" ]; then
    kill "$noise_pid" 2>/dev/null
    wait "$noise_pid" 2>/dev/null
    noise_pid=
  fi
}
trap stop_noise EXIT

cat > "$out/campaign.toml" <<EOF
gpus = [0]

[campaign]
tasks = ["$PWD/tasks/quickstart/19_relu.toml", "$PWD/tasks/quickstart/23_softmax.toml"]
output = "$out/campaign"
wall_time_s = 50
candidates_per_task = 8

[search]
stop_patience = 3

[bench]
stability_pause_s = 2
stability_limit_s = 30

[memory]
path = "$out/memory"
EOF

"$noise_bin" --device 0 --on 4 --off 3 --seconds 150 > "$out/noise.log" 2>&1 &
noise_pid=$!
sleep 2
if ! kill -0 "$noise_pid" 2>/dev/null || ! grep -q "noise: on" "$out/noise.log"; then
  echo "noise-check: the noise maker did not start (is the GPU in an exclusive compute mode?):"
  cat "$out/noise.log"
  exit 2
fi

# Every line the campaign prints on stderr, stamped with the seconds since it started.
printf -v start '%(%s)T' -1
# (The compile cache stays out of $OUT: nothing there is worth carrying back.)
"$ks" run "$out/campaign.toml" --progress 5 --cache-dir /tmp/ks-noise-check-cache \
  > "$out/stdout.log" \
  2> >(while IFS= read -r line; do
         printf -v now '%(%s)T' -1
         printf '%4d %s\n' $((now - start)) "$line"
       done > "$out/stderr.log")
rc=$?
sleep 1 # the stamping loop drains
stop_noise
printf -v end '%(%s)T' -1
echo "campaign: exit $rc after $((end - start)) s (noise: $(grep -c 'noise: on' "$out/noise.log") bursts)"
tail -n 25 "$out/stdout.log"
if [ ! -f "$out/campaign/results.json" ]; then
  echo "noise-check: the campaign wrote no results.json; its stderr ends with:"
  tail -n 20 "$out/stderr.log"
  exit 2
fi

pass=0
fail=0
verdict() {  # verdict PASS|FAIL TEXT
  echo "noise-check: $1: $2"
  if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}

# 1. Reported within a minute.
first=$(grep -m1 -E 'GPU 0 .*is unstable' "$out/stderr.log")
at=$(awk '{print $1}' <<<"$first")
if [ -n "$first" ] && [ "$at" -le 60 ] 2>/dev/null; then
  verdict PASS "reported within a minute: $first"
elif [ -n "$first" ]; then
  verdict FAIL "reported, but after a minute: $first"
else
  verdict FAIL "no line says GPU 0 is unstable (see $out/stderr.log)"
fi

# 2 and 3: results.json, then each winner re-timed on the quiet GPU.
python3 - "$out/campaign/results.json" "$ks" "$out" <<'PY'
import json, subprocess, sys, os
results_path, ks, out = sys.argv[1], sys.argv[2], sys.argv[3]
results = json.load(open(results_path))
ok = True
def verdict(good, text):
    global ok
    print("noise-check: %s: %s" % ("PASS" if good else "FAIL", text))
    ok = ok and good
warnings = results.get("warnings") or []
stability = results.get("gpu_stability") or {}
runs = stability.get("runs") or []
episodes = runs[-1]["gpus"][0]["episodes"] if runs and runs[-1].get("gpus") else []
verdict(bool(warnings) and bool(episodes),
        "results.json carries the warning (%d warnings, %d episodes on GPU 0): %s"
        % (len(warnings), len(episodes), warnings[0] if warnings else "-"))
if runs:
    g = runs[-1]["gpus"][0]
    print("noise-check: GPU 0: %d probes, quiet probe %.3f ms, %d timings made again, %d flagged, "
          "unreliable: %s" % (g["probes"], g["quiet_ms"] or 0, g["retimed"], g["flagged"],
                              stability.get("unreliable")))
base = os.path.dirname(results_path)
for task in results["tasks"]:
    name, winner = task["name"], task.get("winner")
    ref_ms = (task.get("reference") or {}).get("median_ms") or 0
    if not winner:
        verdict(False, "%s: no winner (%s: %s)" % (name, task["state"], task.get("stop_text")))
        continue
    verdict(winner["median_ms"] <= ref_ms,
            "%s: the campaign's winner (node %d) %.4f ms against its reference's %.4f ms"
            % (name, winner["node"], winner["median_ms"], ref_ms))
    if winner["node"] == 0:
        verdict(True, "%s: the winner is the reference itself" % name)
        continue
    run = subprocess.run([ks, "eval", task["manifest"], os.path.join(base, winner["file"]),
                          "--json"], capture_output=True, text=True)
    open(os.path.join(out, "eval-%s.json" % name), "w").write(run.stdout + run.stderr)
    try:
        speedup = json.loads(run.stdout)["speedup"]
    except Exception:
        verdict(False, "%s: kernelskill eval failed (exit %d): %s"
                % (name, run.returncode, (run.stdout + run.stderr)[-400:]))
        continue
    verdict(speedup >= 0.95, "%s: re-timed on the quiet GPU, the winner is %.2fx its reference"
            % (name, speedup))
sys.exit(0 if ok else 1)
PY
py=$?
[ "$rc" = 0 ] || verdict FAIL "the campaign exited $rc (see $out/stderr.log)"
if [ "$fail" = 0 ] && [ "$py" = 0 ]; then
  echo "noise-check: ALL PASS"
  exit 0
fi
echo "noise-check: SOME FAILED"
exit 1
