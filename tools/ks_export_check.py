#!/usr/bin/env python3
"""Checks a package of `kernelskill export` on a GPU host, as issue 24 asks, and prints a
table (scripts/gpu-export-check.sh runs it after a campaign, an export and a build):

1. every op is ready: the package was built (ahead of time, or just in time here) and each
   kernel loaded;
2. every op matches its torch expression within its task's tolerance, on inputs drawn as the
   bench worker draws them to verify (the package's own verify()); a drop-in module matches
   its original module too (its verify());
3. every op's time through PyTorch (the op called from Python, CUDA events, L2 flushed before
   each call, median; tools/torch_baselines.py's timer, the bench worker's method) is within
   --tolerance (default 5%) of the campaign's time for the kernel, with the torch expression
   timed beside it the same way;
4. for each drop-in module: a small model (the original module, then a ReLU) gives the same
   output with the module swapped for the exported one (state_dict carried over), and both
   are timed.

With --versus-torch R, only this, for each op (or those --ops names): the op, the task's
torch baseline eagerly (the module for an imported task, else its torch expression) and under
torch.compile, timed in R interleaved rounds (each round times all three back to back, the
order rotating), on one set of inputs, with the timer above; the table gives each one's median
over the rounds, the ratios, the noise (the larger round-to-round spread of the two sides:
METHOD.md's "time the same version twice") and whether the op is slower than torch beyond it
(torch_baselines.head_to_head). This is the comparison the campaign's "vs torch" columns
approximate with times taken minutes apart; exit 0 when every op was timed, 1 when one could
not be (its row says why).

Exit codes: 0 every check passed, 1 some check failed (the table says which), 3 the host
cannot run the checks (no torch with CUDA, the package does not import).

Usage: ks_export_check.py PKG_FOLDER [--device N] [--tolerance 0.05] [--json FILE]
       ks_export_check.py PKG_FOLDER --versus-torch 5 [--ops A,B] [--kernelskill PATH]
"""

import argparse
import importlib
import json
import math
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def timer_args():
    return types.SimpleNamespace(warmup_ms=25.0, min_trials=20, max_trials=2000, max_ms=2000.0,
                                 stable_rel=0.005, compile_mode="default", skip_compile=True)


def load_package(folder):
    """Imports the package that `folder` (an export's PKG folder, or one it was installed
    into) holds; returns the module."""
    record_paths = [os.path.join(folder, d, "export.json") for d in os.listdir(folder)]
    names = [os.path.basename(os.path.dirname(p)) for p in record_paths if os.path.isfile(p)]
    if len(names) != 1:
        raise RuntimeError(f"{folder} holds {len(names)} exported packages, not one")
    sys.path.insert(0, os.path.abspath(folder))
    return importlib.import_module(names[0])


def check_op(torch, pkg, op, timer, tolerance):
    """Returns the row of one op: verification, the time through PyTorch against the
    campaign's, the torch expression's time."""
    record = pkg.record["ops"][op]
    row = {"op": op, "campaign_ms": record["measured"].get("median_ms")}
    try:
        row["verify"] = pkg.verify([op])[op]
        row["verified"] = True
    except pkg.VerificationError as e:
        row["verify"] = str(e)
        row["verified"] = False
    generator = torch.Generator(device=timer.device)
    generator.manual_seed(20261126)
    inputs = [timer.make_input(s, generator) for s in record["inputs"]]
    with torch.no_grad():
        row["torch_ms"] = timer.time_function(pkg.ops[op].op, inputs)["median_ms"]
        try:
            row["eager_ms"] = timer.time_function(pkg._package.expression(op), inputs)["median_ms"]
        except Exception as e:  # an expression that does not run is reported, not fatal
            row["eager_ms"] = None
            row["eager_error"] = f"{type(e).__name__}: {e}"
    campaign = row["campaign_ms"]
    row["ratio"] = row["torch_ms"] / campaign if campaign else None
    row["timing_ok"] = row["ratio"] is not None and abs(row["ratio"] - 1) <= tolerance
    return row


def check_swap(torch, pkg, op, timer):
    """Returns the row of one drop-in module swapped into a small model."""
    record = pkg.record["ops"][op]
    table = record["module"]
    exported = pkg.modules[op]
    original_class = exported.__mro__[1]
    import ast
    init = ast.literal_eval(table.get("init", "[]"))

    class Small(torch.nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block = block

        def forward(self, *args):
            out = self.block(*args)
            return torch.relu(out[0] if isinstance(out, (tuple, list)) else out)

    row = {"op": op, "module": table["entry"]}
    model = Small(original_class(*init)).to(timer.device)
    model.train(not table.get("eval", False))
    swapped = Small(exported(*init)).to(timer.device)
    swapped.train(not table.get("eval", False))
    swapped.block.load_state_dict(model.block.state_dict())
    try:
        row["verify"] = swapped.block.verify()
        row["verified"] = True
    except Exception as e:
        row["verify"] = f"{type(e).__name__}: {e}"
        row["verified"] = False
    generator = torch.Generator(device=timer.device)
    generator.manual_seed(20261126)
    specs = {s["name"]: s for s in record["inputs"]}
    tensors = {a["input"]: timer.make_input(specs[a["input"]], generator)
               for a in table.get("arguments", []) if "input" in a}
    args = pkg._ks_module.call_arguments(torch, table, tensors, timer.device, generator)
    with torch.no_grad():
        a, b = model(*args), swapped(*args)
        problem = pkg._package.compare(op, [b], [a], names=("swapped", "original"))
        row["same_output"] = problem is None
        row["output_note"] = problem
        row["original_ms"] = timer.time_function(model, args)["median_ms"]
        row["swapped_ms"] = timer.time_function(swapped, args)["median_ms"]
    row["speedup"] = row["original_ms"] / row["swapped_ms"]
    return row


def versus_torch(torch, torch_baselines, pkg, op, timer, rounds, kernelskill):
    """Returns the row of one op timed against its task's torch baseline, eager and compiled,
    in `rounds` interleaved rounds (see the top of the file)."""
    record = pkg.record["ops"][op]
    row = {"op": op, "campaign_ms": record["measured"].get("median_ms")}
    fn = args = inputs = compiled = None
    try:
        task = torch_baselines.read_tasks([record["manifest"]], kernelskill)[0]
        fn, args, inputs = timer.torch_function(task, 20261126)
        with torch.no_grad():
            compiled = torch.compile(fn)
            compiled(*args)
            timer.synchronize()
            contenders = [("kernel", pkg.ops[op].op, inputs), ("eager", fn, args),
                          ("compile", compiled, args)]
            times = {name: [] for name, _, _ in contenders}
            for r in range(rounds):
                for name, f, a in contenders[r % 3:] + contenders[:r % 3]:
                    times[name].append(timer.time_function(f, a)["median_ms"])
        row.update(torch_baselines.head_to_head(times))
    except Exception as e:  # one op that cannot be timed is reported, not fatal
        row["error"] = f"{type(e).__name__}: {e}"
    finally:
        del fn, args, inputs, compiled
        try:
            torch._dynamo.reset()
        except Exception:
            pass
        torch.cuda.empty_cache()
    return row


def print_versus(rows, rounds):
    """Prints the head-to-head table and its geomeans; returns how many ops could not run."""
    def geomean(values):
        values = [v for v in values if v]
        return math.exp(sum(map(math.log, values)) / len(values)) if values else None

    print(f"| op | kernel ms | torch eager ms | vs eager | torch.compile ms | vs compile | "
          f"noise vs compile | slower beyond the noise |")
    print("|---|---|---|---|---|---|---|---|")
    failed = 0
    for r in rows:
        if "error" in r:
            failed += 1
            print(f"| {r['op']} | - | - | - | - | - | - | not timed: {r['error'][:100]} |")
            continue
        e, c = r["eager"], r["compile"]
        slower = [n for n in ("eager", "compile") if r[n]["slower_beyond_noise"]]
        print(f"| {r['op']} | {r['kernel']['median_ms']:.4f} | {e['median_ms']:.4f} | "
              f"{e['ratio']:.2f}x | {c['median_ms']:.4f} | {c['ratio']:.2f}x | "
              f"{100 * c['noise']:.1f}% | {', '.join(slower) or 'no'} |")
    timed = [r for r in rows if "error" not in r]
    ge = geomean([r["eager"]["ratio"] for r in timed])
    gc = geomean([r["compile"]["ratio"] for r in timed])
    print(f"| **geomean** ({len(timed)} ops, {rounds} rounds) | | | {fmt(ge, 3)}x | | "
          f"{fmt(gc, 3)}x | | |")
    trailing = [f"{r['op']} ({n}, {100 * (r['kernel']['median_ms'] / r[n]['median_ms'] - 1):.1f}%)"
                for r in timed for n in ("eager", "compile") if r[n]["slower_beyond_noise"]]
    print(f"\nSlower than torch beyond the noise: {len(trailing)}"
          f"{': ' + ', '.join(trailing) if trailing else ''}")
    return failed


def fmt(value, digits=4):
    return f"{value:.{digits}g}" if isinstance(value, (int, float)) else "-"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("package", help="the package folder (an export's --out, or where it was "
                                   "installed with pip --target)")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=0.05,
                   help="how far the time through PyTorch may be from the campaign's")
    p.add_argument("--json", help="also write every row into this file")
    p.add_argument("--versus-torch", type=int, default=0, metavar="ROUNDS",
                   help="only time each op against torch eager and torch.compile in ROUNDS "
                        "interleaved rounds (see above)")
    p.add_argument("--ops", help="with --versus-torch: these ops only (comma-separated)")
    p.add_argument("--kernelskill", help="the kernelskill binary that reads the manifests "
                                         "(a family task's torch expression; default: as "
                                         "torch_baselines.py finds it)")
    args = p.parse_args(argv)
    try:
        import torch
        import torch_baselines
    except ImportError as e:
        print(f"ks_export_check: {e}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("ks_export_check: no CUDA device: run it on the GPU host", file=sys.stderr)
        return 3
    try:
        pkg = load_package(args.package)
    except Exception as e:
        print(f"ks_export_check: the package does not import: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 3
    timer = torch_baselines.TorchTimer(torch, args.device, timer_args())
    status = pkg.status()
    print(f"{pkg.__name__} on {timer.name} (torch {torch.__version__}); the campaign measured on "
          f"{', '.join(g.get('name') or '?' for g in pkg.record['campaign']['gpus'])}")
    for op, state in status.items():
        print(f"  {op}: {state}")
    ready = all(state.startswith("ready") for state in status.values())
    if args.versus_torch > 0:
        if not ready:
            print("ks_export_check: the package is not built", file=sys.stderr)
            return 3
        wanted = args.ops.split(",") if args.ops else list(pkg.record["ops"])
        unknown = [op for op in wanted if op not in pkg.record["ops"]]
        if unknown:
            print(f"ks_export_check: no op {', '.join(unknown)} in the package", file=sys.stderr)
            return 3
        timer.args.max_ms = 500.0  # R rounds of three: each measurement shorter
        kernelskill = torch_baselines.find_kernelskill(args.kernelskill)
        rows = []
        for op in wanted:
            rows.append(versus_torch(torch, torch_baselines, pkg, op, timer, args.versus_torch,
                                     kernelskill))
            print(f"  timed {op}", flush=True)
        print()
        failed = print_versus(rows, args.versus_torch)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"device": timer.name, "torch": torch.__version__,
                           "rounds": args.versus_torch, "ops": rows}, f, indent=2)
        return 0 if failed == 0 else 1
    rows, swaps = [], []
    if ready:
        for op in pkg.record["ops"]:
            rows.append(check_op(torch, pkg, op, timer, args.tolerance))
        for op in pkg.modules:
            swaps.append(check_swap(torch, pkg, op, timer))
    print()
    print("| op | matches torch | campaign ms | through PyTorch ms | ratio | torch eager ms | "
          "vs eager |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        vs = r["eager_ms"] / r["torch_ms"] if r.get("eager_ms") else None
        print(f"| {r['op']} | {'yes' if r['verified'] else 'NO: ' + r['verify'][:80]} | "
              f"{fmt(r['campaign_ms'])} | {fmt(r['torch_ms'])} | {fmt(r['ratio'], 3)}"
              f"{'' if r['timing_ok'] else ' (over ' + str(round(args.tolerance * 100)) + '%)'} | "
              f"{fmt(r.get('eager_ms'))} | {fmt(vs, 3)}{'x' if vs else ''} |")
    if swaps:
        print()
        print("| model swap | module verify | same output | original ms | swapped ms | speedup |")
        print("|---|---|---|---|---|---|")
        for s in swaps:
            print(f"| {s['op']} ({s['module']}) | {'yes' if s['verified'] else 'NO: ' + s['verify'][:80]} "
                  f"| {'yes' if s['same_output'] else 'NO: ' + (s['output_note'] or '')[:80]} | "
                  f"{fmt(s['original_ms'])} | {fmt(s['swapped_ms'])} | {fmt(s['speedup'], 3)}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": timer.name, "torch": torch.__version__, "status": status,
                       "ops": rows, "swaps": swaps}, f, indent=2)
    ok = ready and all(r["verified"] and r["timing_ok"] for r in rows) and \
        all(s["verified"] and s["same_output"] and s["speedup"] > 1 for s in swaps)
    print("\nall checks passed" if ok else "\nsome checks FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
