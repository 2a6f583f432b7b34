#!/usr/bin/env python3
"""Prints a campaign's results.json as one markdown table: per task the reference and best
times, the best kernel's share of the roofline, torch eager and torch.compile times (when the
campaign had a baselines file) and the winner's skill lineage; geomeans last.

    scripts/results-table.py OUTPUT/results.json
"""
import json
import math
import sys


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fmt(value, spec=".3f", suffix=""):
    return "-" if value is None else f"{value:{spec}}{suffix}"


def lineage(winner):
    steps = []
    for step in winner.get("lineage", []):
        skill = step.get("skill") or "?"
        params = step.get("params") or {}
        shown = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
        steps.append(f"{skill}({shown})" if shown else skill)
    return " > ".join(steps) or "-"


def main(path):
    doc = json.load(open(path))
    print("| task | reference ms | best ms | roofline | torch eager ms | vs eager | "
          "torch.compile ms | vs compile | winner's lineage |")
    print("|---|---|---|---|---|---|---|---|---|")
    eager_ratios, compile_ratios, speedups = [], [], []
    trailing = []
    for t in doc["tasks"]:
        for trail in t.get("slower_than_torch") or []:
            trailing.append(f"{t['name']} (torch {trail['torch']}, {trail['slower_by'] * 100:.1f}%)")
        winner = t.get("winner") or {}
        best = winner.get("median_ms")
        eager, compiled = t.get("torch_eager_ms"), t.get("torch_compile_ms")
        vs_eager = eager / best if eager and best else None
        vs_compile = compiled / best if compiled and best else None
        roof = winner.get("fraction_of_roofline")
        eager_ratios.append(vs_eager)
        compile_ratios.append(vs_compile)
        speedups.append(winner.get("speedup"))
        print(f"| {t['name']} | {fmt(t['reference'].get('median_ms'), '.4f')} | {fmt(best, '.4f')} | "
              f"{fmt(roof * 100 if roof else None, '.0f', '%')} | {fmt(eager, '.4f')} | "
              f"{fmt(vs_eager, '.2f', 'x')} | {fmt(compiled, '.4f')} | {fmt(vs_compile, '.2f', 'x')} | "
              f"{lineage(winner)} |")
    print(f"| **geomean** | | {fmt(geomean(speedups), '.2f', 'x')} vs reference | | | "
          f"**{fmt(geomean(eager_ratios), '.2f', 'x')}** | | **{fmt(geomean(compile_ratios), '.2f', 'x')}** | |")
    print(f"\nSlower than torch beyond the noise (the best's p10 above torch's p90): "
          f"{len(trailing)}{': ' + ', '.join(trailing) if trailing else ''}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
