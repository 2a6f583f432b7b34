#!/usr/bin/env python3
"""Checks an imported task's reference against the PyTorch module it was imported from, on
the GPU: the same inputs (drawn as the bench worker draws them for verification, the
module's parameters bound to the task's inputs that stand for them), the module run by torch
(TF32 off: float32 is float32), the reference's shared object called through the candidate
ABI (ks_forward, ctypes) on torch's current stream; every element of every output compared
with the task's tolerance (|ref - module| <= atol + rtol * |module|, and the norm-relative
error at most norm_rel), as the worker compares a candidate with the reference. Where they
differ, the module is run once more in float64 (its parameters and inputs widened) as the
arbiter: a deep graph drifts in torch's own float32 by more than a tolerance set for one op
(level 3's GPT blocks by 1e-4 relative), and the reference, which accumulates in double, is
accepted when it is nowhere farther from the float64 result than torch's float32 output is
(beyond the tolerance, element by element and in norm). Run by `kernelskill import --verify`;
prints one line and exits 0 when they agree, 1 when they do not (naming the first differing
element), 3 when the host cannot run the check.
"""

import argparse
import copy
import ctypes
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ks_module  # noqa: E402

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

ABI_DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i32": 4, "i64": 5, "u8": 6}


class KsTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 8), ("stride", ctypes.c_int64 * 8)]


def describe(t, spec):
    d = KsTensor()
    d.data = t.data_ptr()
    d.dtype = ABI_DTYPES[spec["dtype"]]
    d.ndim = len(spec["shape"])
    for i, (extent, stride) in enumerate(zip(t.shape, t.stride())):
        d.shape[i] = extent
        d.stride[i] = stride
    return d


# The comparison a candidate gets from the worker, shared with exported packages' verify().
first_difference = ks_module.first_difference


def verify(torch, manifest, shared_object, device, trials, seed):
    """Returns (None, note) when the reference of `manifest` (compiled to `shared_object`)
    agrees with its module on `device` (the note says when the float64 arbiter decided), else
    (what differs, "")."""
    with open(manifest, "rb") as f:
        doc = tomllib.load(f)
    table = ks_module.module_table(doc)
    if table is None:
        return "the manifest has no module table: nothing to verify against", ""
    tol = {"atol": 1e-5, "rtol": 1e-5, "norm_rel": 1e-5}
    tol.update(doc.get("tolerance", {}))
    library = ctypes.CDLL(os.path.abspath(shared_object))
    forward = library.ks_forward
    forward.restype = ctypes.c_int
    forward.argtypes = [ctypes.POINTER(KsTensor), ctypes.c_int32, ctypes.POINTER(KsTensor),
                        ctypes.c_int32, ctypes.c_void_p]
    try:
        model = ks_module.load_module(torch, table, device)
    except ks_module.ModuleError as e:
        return f"the module cannot be built: {e}", ""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    notes = []
    try:
        with torch.no_grad():
            for trial in range(trials):
                problem = one_trial(torch, doc, table, model, forward, generator, device, tol,
                                    notes)
                if problem:
                    return (problem if trials == 1 else f"{problem} (trial {trial + 1})"), ""
    finally:
        del model
        torch.cuda.empty_cache()
    return None, notes[0] if notes else ""


def arbitrated(torch, ours, theirs, exact, tol):
    """Returns None when `ours` is nowhere farther from `exact` (the module in float64) than
    `theirs` (the module in float32) is, beyond `tol`: element by element, |ours - exact| <=
    |theirs - exact| + atol + rtol * |exact|, and in norm; else what is farther. Also returns
    torch's own norm-relative error."""
    a, b, x = ours.reshape(-1).double(), theirs.reshape(-1).double(), exact.reshape(-1).double()
    keep = ~(torch.isnan(a) & torch.isnan(x))
    bad = keep & ~((a - x).abs() <= (b - x).abs() + tol["atol"] + tol["rtol"] * x.abs())
    den = float((x[keep] ** 2).sum()) or 1.0
    ours_rel = math.sqrt(float(((a - x)[keep] ** 2).sum()) / den)
    torch_rel = math.sqrt(float(((b - x)[keep] ** 2).sum()) / den)
    idx = bad.nonzero()
    if idx.numel():
        i = int(idx[0])
        return (f"element {i} (flat): reference {a[i].item():.9g}, module in float64 "
                f"{x[i].item():.9g}, in float32 {b[i].item():.9g}"), torch_rel
    if ours_rel > max(tol["norm_rel"], torch_rel):
        return (f"norm-relative error {ours_rel:.3g} from the module in float64, torch's float32 "
                f"{torch_rel:.3g}"), torch_rel
    return None, torch_rel


def module_in_float64(torch, model, table, tensors, device, generator):
    """Returns the module's outputs computed in float64: a copy of it widened, the task's
    floating inputs widened, the same parameter bindings."""
    wide = copy.deepcopy(model).double()
    wide_tensors = {k: v.double() if v.is_floating_point() else v for k, v in tensors.items()}
    ks_module.bind_parameters(torch, wide, table, wide_tensors)
    try:
        return ks_module.flat_outputs(
            torch, wide(*ks_module.call_arguments(torch, table, wide_tensors, device, generator)))
    finally:
        del wide


def one_trial(torch, doc, table, model, forward, generator, device, tol, notes):
    tensors = {s["name"]: ks_module.draw_input(torch, s, generator, device, "verify")
               for s in doc["inputs"]}
    try:
        ks_module.bind_parameters(torch, model, table, tensors)
        expected = ks_module.flat_outputs(
            torch, model(*ks_module.call_arguments(torch, table, tensors, device, generator)))
    except Exception as e:
        return f"the module fails on the task's inputs: {type(e).__name__}: {e}"
    if len(expected) != len(doc["outputs"]):
        return (f"the module returns {len(expected)} tensors, the task has "
                f"{len(doc['outputs'])} outputs")
    outs = []
    for s in doc["outputs"]:
        dtype = getattr(torch, ks_module.TORCH_DTYPES[s["dtype"]])
        t = torch.empty(s["shape"], dtype=dtype, device=device)
        if dtype.is_floating_point:
            t.fill_(float("nan"))
        outs.append(t)
    ins = [tensors[s["name"]].contiguous() for s in doc["inputs"]]
    in_desc = (KsTensor * len(ins))(*[describe(t, s) for t, s in zip(ins, doc["inputs"])])
    out_desc = (KsTensor * len(outs))(*[describe(t, s) for t, s in zip(outs, doc["outputs"])])
    torch.cuda.synchronize()
    code = forward(in_desc, len(ins), out_desc, len(outs),
                   ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    torch.cuda.synchronize()
    if code != 0:
        return f"the reference's ks_forward returned {code}"
    exact = None
    for k, (s, ours, theirs) in enumerate(zip(doc["outputs"], outs, expected)):
        problem = first_difference(torch, ours, theirs, tol)
        if not problem or not ours.dtype.is_floating_point:
            if problem:
                return f"output {s['name']} differs from the module: {problem}"
            continue
        if exact is None:
            try:
                exact = module_in_float64(torch, model, table, tensors, device, generator)
            except Exception as e:  # a module that cannot widen: the float32 verdict stands
                return (f"output {s['name']} differs from the module: {problem} (and the "
                        f"module does not run in float64: {type(e).__name__}: {e})")
        arbiter, torch_rel = arbitrated(torch, ours, theirs, exact[k], tol)
        if arbiter:
            return (f"output {s['name']} differs from the module: {problem}; from the module in "
                    f"float64: {arbiter}")
        notes.append(f"the module in float64 decided: torch's float32 output {s['name']} is "
                     f"{torch_rel:.2g} off it (norm-relative), the reference no farther")
    return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--manifest", help="the task's manifest (one task; else --serve)")
    p.add_argument("--shared-object", help="its reference compiled (one task)")
    p.add_argument("--serve", action="store_true",
                   help="read 'MANIFEST<tab>SHARED_OBJECT' lines from stdin, answer each with "
                        "one JSON line {manifest, ok, message}: one process verifies many tasks")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--seed", type=int, default=20261127)
    args = p.parse_args(argv)
    if not args.serve and not (args.manifest and args.shared_object):
        p.error("give --manifest and --shared-object, or --serve")
    try:
        import torch
    except ImportError:
        print(f"cannot import torch in {sys.executable}", file=sys.stderr)
        return 3
    if not torch.cuda.is_available() or args.device >= torch.cuda.device_count():
        print(f"no CUDA device {args.device} on this host: --verify needs a GPU", file=sys.stderr)
        return 3
    # Float32 is float32: the tasks' tolerance would fail a TF32 module as it fails a kernel.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    if not args.serve:
        problem, note = verify(torch, args.manifest, args.shared_object, device, args.trials,
                               args.seed)
        print(problem or f"agrees with the module over {args.trials} trials"
              + (f" ({note})" if note else ""))
        return 1 if problem else 0
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        manifest, _, shared_object = line.partition("\t")
        try:
            problem, note = verify(torch, manifest, shared_object, device, args.trials, args.seed)
        except Exception as e:  # one task's failure never ends the others' checks
            problem, note = f"the check failed: {type(e).__name__}: {e}", ""
        agrees = f"agrees with the module over {args.trials} trials" + (f" ({note})" if note else "")
        print(json.dumps({"manifest": manifest, "ok": problem is None,
                          "message": problem or agrees}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
