#!/usr/bin/env python3
"""Imports KernelBench's levels with `kernelskill import` and prints the coverage table of
docs/benchmarks.md: per level, how many problems import, as a family op or as a graph, and
why the others do not (grouped by reason). KernelBench's files stay in the user's checkout:
nothing of theirs is copied into ours.

Usage: import-coverage.py KERNELSKILL KERNELBENCH_DIR OUT_DIR [LEVEL...]
  KERNELBENCH_DIR holds level1/ level2/ level3/ (KernelBench's KernelBench/ folder);
  KS_IMPORT_ARGS: more arguments of `kernelskill import`, e.g. --eval
"""

import collections
import os
import re
import subprocess
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 1
    ks, bench, out = argv[:3]
    levels = argv[3:] or ["level1", "level2", "level3"]
    rows = []
    reasons = {}
    for level in levels:
        folder = os.path.join(bench, level)
        done = subprocess.run([ks, "import", *os.environ.get("KS_IMPORT_ARGS", "").split(), folder,
                               "--out", os.path.join(out, level)],
                              capture_output=True, text=True)
        lines = done.stdout.splitlines()
        imported = [l for l in lines if l.startswith("imported  ")]
        graphs = [l for l in imported if ": graph of " in l]
        failed = [l for l in lines if l.startswith("not imported  ")]
        by_reason = collections.Counter()
        for l in failed:
            reason = l.split(": ", 1)[1] if ": " in l else l
            reason = re.sub(r"\(`[^`]*`.*", "", reason).strip()
            by_reason[reason[:110]] += 1
        reasons[level] = by_reason
        total = len(imported) + len(failed)
        rows.append((level, total, len(imported), len(imported) - len(graphs), len(graphs)))
    print("| level | problems | imported | as one family op | as a graph |")
    print("|---|---|---|---|---|")
    for level, total, ok, family, graph in rows:
        print(f"| {level} | {total} | {ok} | {family} | {graph} |")
    for level in levels:
        if reasons[level]:
            print(f"\n{level}, not imported:\n")
            for reason, n in reasons[level].most_common():
                print(f"- {n} x {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
