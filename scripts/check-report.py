#!/usr/bin/python3
"""Checks that a campaign's report.html shows what its results.json says.

    scripts/check-report.py REPORT.html RESULTS.json

Parses the report strictly (html5lib: any parse error fails) and compares, for every task of
results.json, the speedup table's row with the task's record: the best kernel's median, its
speedup over the reference, and over torch eager and torch.compile where results.json has
them (each as the report rounds it: within 0.6% or the last digit shown). Prints one line per
difference and a summary; exits 0 when there is none, 1 when there is, 2 on bad input.
Debian's /usr/bin/python3 has html5lib (python3-html5lib, scripts/install-deps.sh).
"""
import json
import re
import sys

try:
    import html5lib
except ImportError:
    sys.exit("check-report.py: python3-html5lib is not installed (scripts/install-deps.sh)")

COLUMNS = {  # results.json's value of a task -> the speedup table's column
    "best": lambda t: (t.get("winner") or {}).get("median_ms"),
    "speedup": lambda t: (t.get("winner") or {}).get("speedup"),
    "vs eager": lambda t: t.get("speedup_vs_eager"),
    "vs compile": lambda t: t.get("speedup_vs_compile"),
}


def text(element):
    return " ".join("".join(element.itertext()).split())


def shown_number(cell):
    """The number a cell shows ("1.413 ms", "7.46x", "0.07539 ms"), and its last digit's size."""
    match = re.match(r"([0-9]+(?:\.([0-9]+))?(?:e[-+]?[0-9]+)?)", cell.replace(",", ""))
    if not match:
        return None, None
    decimals = len(match.group(2) or "")
    return float(match.group(1)), 10.0 ** -decimals


def main(argv):
    if len(argv) != 3:
        print("usage: check-report.py REPORT.html RESULTS.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            doc = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False).parse(f.read())
        with open(argv[2], encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, ValueError, html5lib.html5parser.ParseError) as e:
        print(f"check-report.py: {e}", file=sys.stderr)
        return 2
    table = doc.find(".//table[@id='speedups']")
    if table is None:
        print(f"check-report.py: {argv[1]} has no speedup table", file=sys.stderr)
        return 2
    heads = [text(th) for th in table.find(".//thead").iter("th")]
    rows = {}
    for tr in table.find(".//tbody").iter("tr"):
        cells = [text(c) for c in tr if c.tag in ("td", "th")]
        if cells:
            rows[cells[0]] = dict(zip(heads, cells))
    differences = compared = 0
    for task in results.get("tasks", []):
        row = rows.get(task["name"])
        if row is None:
            print(f"{task['name']}: not in the report's speedup table")
            differences += 1
            continue
        for column, value_of in COLUMNS.items():
            value = value_of(task)
            if value is None or column not in row:
                continue
            shown, digit = shown_number(row[column])
            compared += 1
            if shown is None or abs(shown - value) > max(0.006 * abs(value), digit):
                print(f"{task['name']}: {column} shows '{row[column]}', results.json has {value:.6g}")
                differences += 1
    extra = set(rows) - {t["name"] for t in results.get("tasks", [])}
    for name in sorted(extra):
        print(f"{name}: in the report but not in results.json")
        differences += 1
    print(f"check-report.py: {len(results.get('tasks', []))} tasks, {compared} numbers compared, "
          f"{differences} difference(s)")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
