"""The PyTorch module behind an imported task (the manifest's `module` table, written by
tools/ks_import.py), for the tools that run it: tools/torch_baselines.py times it, tools/
ks_verify.py checks the task's reference against it. Also how inputs are drawn, the bench
worker's way, so that both tools and the worker agree on what `init` means, and how outputs
are compared, as the worker compares them. `kernelskill export` copies this file into every
package it writes (as _ks_module.py): their verify() draws and compares the same way.

The table (docs/tasks.md): `source` (the file's text when imported), `entry` (the nn.Module
class or function in it), `init` (the constructor's arguments, a Python literal), `arguments`
(forward's positional arguments in order: {input = NAME [, dtype = "bool"]}, {value =
LITERAL}, or {unused = DTYPE, shape = [...]} for a tensor argument the op never reads),
`parameters` (module parameter or buffer -> task input), `outputs` (how many tensors forward
returns), `eval` (true: the module runs in eval mode; default: training, as nn.Module starts).
"""

import ast
import hashlib
import importlib.util
import math
import os
import sys
import types

# The manifest's dtypes and their torch names.
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
                "i32": "int32", "i64": "int64", "u8": "uint8"}


class ModuleError(Exception):
    """The module table cannot be turned into a working module; the message says why."""


def module_table(doc):
    """Returns the manifest's module table (a dict), or None when it has none."""
    table = doc.get("module")
    if table is None:
        return None
    if not isinstance(table, dict) or not isinstance(table.get("source"), str) or \
            not isinstance(table.get("entry"), str):
        raise ModuleError("the module table needs `source` and `entry`")
    return table


def load_module(torch, table, device):
    """Returns the table's module built on `device` (a class is instantiated with `init`, a
    function wrapped in a module), in the mode the table says."""
    name = "ks_module_" + hashlib.sha1(table["source"].encode()).hexdigest()[:12]
    module = types.ModuleType(name)
    module.__file__ = table.get("file", name + ".py")
    folder = os.path.dirname(table.get("file", ""))
    added = bool(folder) and os.path.isdir(folder)
    if added:
        sys.path.insert(0, folder)  # the user's module may import its neighbours
    try:
        exec(compile(table["source"], module.__file__, "exec"), module.__dict__)
    except Exception as e:
        raise ModuleError(f"the module's source does not run: {type(e).__name__}: {e}") from e
    finally:
        if added and sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    entry = getattr(module, table["entry"], None)
    if entry is None:
        raise ModuleError(f"the module's source defines no {table['entry']!r}")
    try:
        init = ast.literal_eval(table.get("init", "[]"))
    except (ValueError, SyntaxError) as e:
        raise ModuleError(f"init {table.get('init')!r} is not a Python literal") from e
    with torch.device(device):
        if isinstance(entry, type):
            model = entry(*init)
        else:
            fn = entry

            class FunctionModule(torch.nn.Module):
                def forward(self, *args):
                    return fn(*args)

            model = FunctionModule()
    model = model.to(device)
    model.train(not table.get("eval", False))
    return model


def bind_parameters(torch, model, table, tensors):
    """Copies the task's input tensors into the module's parameters and buffers they stand
    for, so that the module computes with the very values the reference reads."""
    with torch.no_grad():
        for target, name in table.get("parameters", {}).items():
            try:
                slot = model.get_parameter(target)
            except AttributeError:
                slot = model.get_buffer(target)
            if tuple(slot.shape) != tuple(tensors[name].shape):
                raise ModuleError(f"parameter {target} has shape {list(slot.shape)}, input "
                                  f"{name} {list(tensors[name].shape)}")
            slot.copy_(tensors[name])


def call_arguments(torch, table, tensors, device, generator=None):
    """Returns forward's positional arguments: the task's tensors by name, literals, and
    fresh tensors for arguments the op never reads."""
    args = []
    for a in table.get("arguments", []):
        if "input" in a:
            t = tensors[a["input"]]
            args.append(t.bool() if a.get("dtype") == "bool" else t)
        elif "value" in a:
            args.append(ast.literal_eval(a["value"]))
        elif "unused" in a:
            dtype = getattr(torch, TORCH_DTYPES.get(a["unused"], "float32"))
            args.append(torch.rand(a["shape"], device=device, generator=generator).to(dtype))
        else:
            raise ModuleError(f"an argument {a!r} is none of input, value, unused")
    return args


def flat_outputs(torch, result):
    """Returns forward's result as a list of tensors (a tuple or list flattened)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out += flat_outputs(torch, r)
        return out
    raise ModuleError(f"forward returned a {type(result).__name__}, not tensors")


def draw_input(torch, spec, generator, device, purpose):
    """Returns a tensor for input `spec` as the bench worker draws it: for "timing" uniform on
    [0, 1) (KernelBench's torch.rand) unless init is positive or randint; for "verify" by its
    init: normal, uniform on [-1, 1), uniform01, positive on [0.5, 1.5), randint on [low,
    high). An integer tensor drawn from a real distribution is truncated, as the worker's."""
    dtype = getattr(torch, TORCH_DTYPES[spec["dtype"]])
    shape = spec["shape"]
    init = spec.get("init", "normal")
    if init == "randint":
        t = torch.randint(spec["low"], spec["high"], shape, generator=generator, device=device,
                          dtype=torch.int64)
        return t.to(dtype)
    draw = dtype if dtype.is_floating_point else torch.float32
    if purpose == "timing" or init in ("uniform01", "positive"):
        t = torch.rand(shape, generator=generator, device=device, dtype=draw)
        if init == "positive":
            t.add_(0.5)
    elif init == "uniform":
        t = torch.rand(shape, generator=generator, device=device, dtype=draw).mul_(2).sub_(1)
    else:
        t = torch.randn(shape, generator=generator, device=device, dtype=draw)
    return t if dtype.is_floating_point else t.to(dtype)


def first_difference(torch, ours, theirs, tol, names=("reference", "module")):
    """Returns None when `ours` (a kernel's output) agrees with `theirs` (torch's: the
    module's, or a torch expression's) within `tol` ({atol, rtol, norm_rel}, as the bench
    worker compares), else a sentence naming the first element that does not (`names` are
    what the sentence calls the two sides), or the norm-relative error. Compares in chunks:
    outputs reach gigabytes, their float64 copies would not fit beside them."""
    if ours.shape != theirs.shape:
        return f"shape {list(ours.shape)} against the {names[1]}'s {list(theirs.shape)}"
    a_all, b_all = ours.reshape(-1), theirs.reshape(-1).to(ours.dtype if not ours.dtype.is_floating_point else theirs.dtype)
    step = 1 << 26
    num = den = 0.0
    for begin in range(0, a_all.numel(), step):
        a, b = a_all[begin:begin + step], b_all[begin:begin + step]
        if ours.dtype.is_floating_point:
            a, b = a.double(), b.double()
            both_nan = torch.isnan(a) & torch.isnan(b)
            bad = (~both_nan) & ~((a - b).abs() <= tol["atol"] + tol["rtol"] * b.abs())
        else:
            bad = a != b
        idx = bad.nonzero()
        if idx.numel():
            i = begin + int(idx[0])
            at = [int(x) for x in torch.unravel_index(torch.tensor(i), ours.shape)] if ours.dim() else []
            return (f"element {at}: {names[0]} {a_all[i].item():.9g}, {names[1]} {b_all[i].item():.9g}"
                    + (f" (atol {tol['atol']:g}, rtol {tol['rtol']:g})" if ours.dtype.is_floating_point else ""))
        if ours.dtype.is_floating_point:
            keep = ~both_nan
            num += float(((a - b)[keep] ** 2).sum())
            den += float((b[keep] ** 2).sum())
    rel = math.sqrt(num / den) if den > 0 else math.sqrt(num)
    if rel > tol["norm_rel"]:
        return f"norm-relative error {rel:.3g} above norm_rel {tol['norm_rel']:g}"
    return None
