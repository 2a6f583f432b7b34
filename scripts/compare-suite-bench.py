#!/usr/bin/env python3
"""Prints the references' medians and timing-job wall times of two ks-suite-bench logs side
by side (before, after), as a Markdown table: scripts/gpu-check.sh uses it with BEFORE=.
A log whose table has a "time again s" column (a task's second timing job) contributes that
one: a task's first job also pays one-time costs that later jobs do not."""
import sys


def rows(path):
    table = {}
    for line in open(path, errors="replace"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 13 and cells[2] == "ok":
            wall = float(cells[13]) if len(cells) >= 14 else float(cells[10])
            table[(cells[0], cells[1])] = (float(cells[3]), float(cells[4]), float(cells[5]),
                                           wall)
    return table


before, after = rows(sys.argv[1]), rows(sys.argv[2])
print("| suite | task | median before | median after | change | p10-p90 after | time job s before | after | change |")
print("|---|---|---|---|---|---|---|---|---|")
for key in sorted(set(before) & set(after)):
    b, a = before[key], after[key]
    print(f"| {key[0]} | {key[1]} | {b[0]:.4f} | {a[0]:.4f} | {100 * (a[0] / b[0] - 1):+.1f}% "
          f"| {a[1]:.4f}-{a[2]:.4f} | {b[3]:.2f} | {a[3]:.2f} | {100 * (a[3] / b[3] - 1):+.0f}% |")
for key in sorted(set(before) ^ set(after)):
    print(f"| {key[0]} | {key[1]} | only in {'before' if key in before else 'after'} |||||||")
