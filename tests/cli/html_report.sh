#!/usr/bin/env bash
# report.html (report/html_report.hpp) as a reader gets it, from a campaign made with the
# scripted worker (two GPUs, torch baselines) and from a dry run:
#   html:    both are written (the campaign's beside report.md, with its bench trace; the dry
#            run's in dry-run/), `status` points to it, `kernelskill report` rewrites it, and
#            both pass html5lib's strict parser (a parse error fails) with data in every plot,
#            the search trees and, for the campaign, the GPU timeline;
#   browser: headless Chromium opens both: no console message (the page's policy turns any
#            request into one), no request that leaves the file in Chromium's network log, the
#            plots still there after the page's script ran, and a screenshot of each kept in
#            BUILD_DIR/test-artifacts/. Skipped (125) where Chromium is not installed.
# Usage: html_report.sh KERNELSKILL SOURCE_DIR BUILD_DIR html|browser
set -uo pipefail
ks=${1:?usage: html_report.sh KERNELSKILL SOURCE_DIR BUILD_DIR html|browser}
src=${2:?usage: html_report.sh KERNELSKILL SOURCE_DIR BUILD_DIR html|browser}
build=${3:?usage: html_report.sh KERNELSKILL SOURCE_DIR BUILD_DIR html|browser}
part=${4:?usage: html_report.sh KERNELSKILL SOURCE_DIR BUILD_DIR html|browser}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Debian's html5lib is for Debian's python3, which need not be the first on PATH.
py=
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import html5lib' 2>/dev/null; then
    py=$candidate
    break
  fi
done
[ -n "$py" ] \
  || { echo "python3-html5lib is not installed (scripts/install-deps.sh installs it): skipped"; exit 125; }
browser=$(command -v chromium || command -v chromium-browser || true)
if [ "$part" = browser ] && [ -z "$browser" ]; then
  echo "chromium is not installed (scripts/install-deps.sh installs Debian's package): skipped"
  exit 125
fi
worker="$(dirname "$ks")/ks-scripted-worker"
[ -x "$worker" ] || { echo "FAIL: no scripted worker at $worker" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export KS_NVCC="$src/tests/actors/fake_nvcc.sh"
export KS_SCRIPTED_MODE=campaign KS_SCRIPTED_DEVICES=2 KS_SCRIPTED_STATE_DIR="$tmp/worker-state"
export KS_SCRIPTED_JOB_MS=20
q="$src/tasks/quickstart"

cat >baselines.json <<JSON
{"format": "kernelskill-torch-baselines", "version": 1, "device": "Scripted GPU",
 "torch_version": "2.11.0", "date": "2026-11-26T00:00:00Z", "method": {"compile_mode": "default"},
 "tasks": {
   "relu": {"eager": {"median_ms": 2.0, "p10_ms": 1.9, "p90_ms": 2.1, "trials": 10},
            "compile": {"median_ms": 1.0, "p10_ms": 0.9, "p90_ms": 1.1, "trials": 10}}}}
JSON
cat >campaign.toml <<TOML
gpus = [0, 1]
[campaign]
tasks = ["$q/19_relu.toml", "$q/47_sum.toml", "$q/1_matmul.toml"]
output = "out"
candidates_per_task = 10
[search]
branches = 3
depth = 3
stop_patience = 2
finalists = 3
[bench]
trials = 1
warmup_ms = 0
max_timing_ms = 1
[report]
torch_baselines = "baselines.json"
TOML

timeout 300 "$ks" run campaign.toml --worker "$worker" --progress 0 >run.out 2>run.err; rc=$?
[ "$rc" -eq 0 ] || fail "campaign: exit $rc: $(tail -20 run.err)"
[ -s out/report.html ] || fail "campaign: no out/report.html beside report.md: $(ls out)"
grep -q '"run_started_unix_s"' out/bench-trace.jsonl 2>/dev/null \
  || fail "campaign: no run header in out/bench-trace.jsonl"
grep -q '"purpose": "reference_time"' out/bench-trace.jsonl 2>/dev/null \
  || fail "campaign: no job in out/bench-trace.jsonl"
# The finals' rounds reach the spread plots: the report reads the finalist's node from the
# supervisor's label of a final round (TASK#NODE (final)), so this ties the two together.
grep -q '"purpose": "final_round"' out/bench-trace.jsonl 2>/dev/null \
  || fail "campaign: no final round in out/bench-trace.jsonl"
grep -q 'class="point round"' out/report.html \
  || fail "campaign: no finalist's rounds in the spread plots of out/report.html"
timeout 120 "$ks" run campaign.toml --dry-run --progress 0 >dry.out 2>dry.err; rc=$?
[ "$rc" -eq 0 ] || fail "dry run: exit $rc: $(cat dry.out dry.err | tail -20)"
[ -s out/dry-run/report.html ] || fail "dry run: no out/dry-run/report.html: $(ls -R out/dry-run)"

"$ks" status out >status.out 2>status.err || fail "status: $(cat status.err)"
grep -q "^report: out/report.html" status.out || fail "status does not point to the report: $(cat status.out)"
rm out/report.html
"$ks" report out >report.out 2>report.err; rc=$?
[ "$rc" -eq 0 ] || fail "report: exit $rc: $(cat report.err)"
[ -s out/report.html ] || fail "report: did not write out/report.html: $(cat report.out)"
"$ks" report "$tmp/none" >/dev/null 2>report.err && fail "report of a missing folder: exit 0"
# A folder that holds only a dry run: no campaign (2), and status names the dry run's report.
mkdir dry-only && cp -r out/dry-run dry-only/
"$ks" status dry-only >/dev/null 2>status.err; rc=$?
[ "$rc" -eq 2 ] || fail "status of a dry run's folder: exit $rc, wanted 2"
grep -q "its report in dry-only/dry-run/report.html" status.err \
  || fail "status of a dry run's folder does not name its report: $(cat status.err)"

# What every report must hold, in its text as written (html) or in Chromium's DOM (browser).
check_report() {  # check_report FILE campaign|dry-run
  "$py" - "$1" "$2" <<'PY'
import sys, html5lib
path, kind = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
# Strict: any parse error (a stray tag, a bad attribute, an unclosed element) raises.
doc = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(text)
svg = "{http://www.w3.org/2000/svg}"
plots = [e for e in doc.iter(svg + "svg") if "plot" in e.get("class", "").split()]
assert plots, "no plot"
for p in plots:
    points = [e for e in p.iter() if "point" in e.get("class", "").split()]
    assert points, "plot %s (%s) has no data point" % (p.get("id"), p.get("data-plot"))
    assert p.get("role") == "img" and p.find(svg + "title") is not None \
        and p.find(svg + "desc") is not None, "plot %s has no text alternative" % p.get("id")
kinds = {p.get("data-plot") for p in plots}
assert "tree" in kinds, kinds
if kind == "campaign":
    assert {"roofline", "timeline", "progress", "spread"} <= kinds, kinds
    assert doc.find(".//table[@id='speedups']") is not None, "no speedup table"
lang = doc.getroot().get("lang") if hasattr(doc, "getroot") else doc.get("lang")
assert lang == "en", lang
print(kind, "report:", len(plots), "plots:", ", ".join(sorted(kinds)))
PY
}

if [ "$part" = html ]; then
  check_report out/report.html campaign || fail "out/report.html: see above"
  "$py" "$src/scripts/check-report.py" out/report.html out/results.json \
    || fail "out/report.html does not show what out/results.json says: see above"
  check_report out/dry-run/report.html dry-run || fail "out/dry-run/report.html: see above"
else
  artifacts="$build/test-artifacts"
  mkdir -p "$artifacts"
  # Everything Chromium would fetch by itself (updates, sync, fonts of no page) is turned off,
  # so that its network log holds the page's requests only; those are told apart anyway by
  # their initiator (the page's is "null", a file's opaque origin).
  open_in_browser() {  # open_in_browser FILE NAME
    local profile="$tmp/chromium-$2"
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --disable-default-apps --disable-extensions --user-data-dir="$profile" \
      --enable-logging=stderr --v=0 --log-net-log="$tmp/$2.netlog.json" \
      --dump-dom "file://$1" >"$tmp/$2.dom.html" 2>"$tmp/$2.console.txt" \
      || { fail "chromium could not open $1: $(tail -5 "$tmp/$2.console.txt")"; return; }
    if grep -q 'CONSOLE' "$tmp/$2.console.txt"; then
      fail "$2: console messages: $(grep CONSOLE "$tmp/$2.console.txt")"
    fi
    "$py" - "$tmp/$2.netlog.json" <<'PY' || fail "$2: requests outside the file (above)"
import json, sys
log = json.load(open(sys.argv[1]))
start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
starts = [e["params"] for e in log["events"] if e["type"] == start and "url" in e.get("params", {})]
outside = [p.get("url") for p in starts if p.get("initiator") != "not an origin"
           and not p.get("url", "").startswith(("file:", "data:", "about:"))]
if outside:
    print("requests:", outside)
    sys.exit(1)
PY
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$profile" --hide-scrollbars --window-size=1280,2600 \
      --screenshot="$artifacts/$2.png" "file://$1" >/dev/null 2>&1
    [ -s "$artifacts/$2.png" ] || fail "$2: no screenshot at $artifacts/$2.png"
  }
  open_in_browser "$tmp/out/report.html" report-campaign
  check_report "$tmp/report-campaign.dom.html" campaign || fail "report-campaign in Chromium: see above"
  open_in_browser "$tmp/out/dry-run/report.html" report-dry-run
  check_report "$tmp/report-dry-run.dom.html" dry-run || fail "report-dry-run in Chromium: see above"
  cp out/report.html "$artifacts/report-campaign.html"
  cp out/dry-run/report.html "$artifacts/report-dry-run.html"
fi

[ "$failures" -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "ok"
