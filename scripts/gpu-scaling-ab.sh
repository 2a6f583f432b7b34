#!/usr/bin/env bash
# Compares the two-GPU scaling of two install trees on one machine, so that a change to the
# scheduling is measured apart from changes of the suite, the card or the day:
#
#   scripts/gpu-scaling-ab.sh DIST_A DIST_B
#
# ROUNDS times (default 3), A then B, each runs one pair of `gpu-campaign.sh scaling` (the
# kernelbench-l1 suite on GPU 0 alone, then on all GPUs, BUDGET candidates per task), each
# tree with its own compile cache, warmed by a warm-up run when it has none. Alternating puts
# both trees through the same drift of the machine. Prints each pair, then per tree the ratio
# pooled over its pairs (total candidates over total wall, both ways), last.
#
# The pairs and caches stay in /tmp/ks-scaling-ab, so a second call on the same machine adds
# its rounds to the first's (a call has 10 minutes; a round of both trees takes about 3);
# FRESH=1 starts over.
set -uo pipefail
cd "$(dirname "$0")/.."
a=$(realpath "${1:?usage: gpu-scaling-ab.sh DIST_A DIST_B}")
b=$(realpath "${2:?usage: gpu-scaling-ab.sh DIST_A DIST_B}")
rounds=${ROUNDS:-3}
work=/tmp/ks-scaling-ab
[ "${FRESH:-0}" = 1 ] && rm -rf "$work"
mkdir -p "$work"
# FIXED=1: trees of a fixed size, so both sides of a pair time about as many candidates and
# the ratio measures the scheduling: no task stops below 100% of its roofline or for want of
# gains (such stops ride on single timings, which on these cards move between two levels 17%
# apart); each plans its BUDGET unless the planner runs out of plans.
variant=default
if [ "${FIXED:-0}" = 1 ]; then
  variant=fixed
  export KEYS="search.stop_roofline_fraction=1 search.expand_max_fraction=1 stop_patience=1000"
fi
pairs=$work/pairs-$variant.txt
touch "$pairs"
done_rounds=$(grep -c '^B ' "$pairs")
for round in $(seq $((done_rounds + 1)) $((done_rounds + rounds))); do
  for tree in A B; do
    dist=$a
    [ "$tree" = B ] && dist=$b
    warm=0
    [ -d "$work/cache-$variant-$tree" ] || warm=1
    log=$work/$variant-$tree-$round.log
    OUT=$work/$variant-$tree-$round WARM=$warm CACHE=$work/cache-$variant-$tree REPEAT=1 BUDGET=${BUDGET:-12} \
      scripts/gpu-campaign.sh scaling "$dist" > "$log" 2>&1
    line=$(grep -m1 '^| pair 1:' "$log" | sed -e 's/^| //' -e 's/ | | |$//')
    echo "$tree round $round: ${line:-no pair line (see the log below)}"
    [ -n "$line" ] || tail -30 "$log"
    [ -n "$line" ] && echo "$tree $line" >> "$pairs"
  done
done
echo
echo "=== scaling A/B, $variant trees (A=$a, B=$b; every round on this machine so far)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem --format=csv,noheader
python3 - "$pairs" <<'PY'
import re, sys
pattern = re.compile(r"one GPU (\d+) candidates in ([0-9.]+) s .*all GPUs (\d+) in ([0-9.]+) s .*campaign-wall ratio ([0-9.]+)x")
trees = {}
for line in open(sys.argv[1]):
    tree, rest = line.split(" ", 1)
    m = pattern.search(rest)
    if m:
        one, w1, both, w2, cw = m.groups()
        trees.setdefault(tree, []).append((int(one), float(w1), int(both), float(w2), float(cw)))
print("| tree | pairs | each pair's ratio | pooled ratio | campaign-wall ratios |")
print("|---|---|---|---|---|")
for tree, rows in sorted(trees.items()):
    each = [(b / w2) / (o / w1) for o, w1, b, w2, _ in rows if o > 0 and w2 > 0]
    one = sum(r[0] for r in rows); w1 = sum(r[1] for r in rows)
    both = sum(r[2] for r in rows); w2 = sum(r[3] for r in rows)
    pooled = (both / w2) / (one / w1) if one and w2 else float("nan")
    print(f"| {tree} | {len(rows)} | {', '.join(f'{x:.2f}x' for x in each)} | {pooled:.2f}x "
          f"({one} in {w1:.1f} s; {both} in {w2:.1f} s) | {', '.join(f'{r[4]:.2f}x' for r in rows)} |")
PY
