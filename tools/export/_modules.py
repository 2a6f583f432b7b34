"""Drop-in modules: for a task imported from an nn.Module (its manifest's [module] table), a
subclass of the original class (kept in originals/<op>.py) whose forward calls the exported
op. Being a subclass, it has the original's constructor, parameters, buffers and state_dict
keys: `model.block = package.Block(*same_args)` then `load_state_dict` works as before.

The kernel computes the module exactly as it was imported, so forward runs it only where the
call is that module: constructed with the same arguments (the importer baked their values
into the kernel: a width, an alpha), called with the same literal arguments, in the same mode
where the module has batch norm or dropout, on tensors of the tuned shapes and dtypes on a
CUDA device. Elsewhere it raises, saying what differs, unless `ks_fallback` is set (on the
instance or the class): then it runs the original forward. verify() runs both on random
inputs and compares them with the task's tolerance.
"""

import ast
import importlib
import inspect

import torch

from . import _ks_module
from ._runtime import VerificationError, _float32_is_float32

# Modules whose forward depends on the training mode: where one is inside, the mode counts.
_MODE_DEPENDENT = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.dropout._DropoutNd,
                   torch.nn.modules.instancenorm._InstanceNorm)


def _original(package, op, spec):
    """Returns the original class (or a module class around the original function)."""
    module = importlib.import_module(f"{package.name}.originals.{op}")
    entry = getattr(module, spec["module"]["entry"])
    if isinstance(entry, type) and issubclass(entry, torch.nn.Module):
        return entry
    function = entry

    class FunctionModule(torch.nn.Module):
        def forward(self, *args, **kwargs):
            return function(*args, **kwargs)
    FunctionModule.__name__ = FunctionModule.__qualname__ = getattr(function, "__name__", op)
    return FunctionModule


def _bound(signature, first, args, kwargs):
    """Returns the positional values of a call of `signature` (its first parameter is `first`:
    self), defaults applied; None when it does not bind."""
    try:
        bound = signature.bind(first, *args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    values = []
    for p in list(signature.parameters.values())[1:]:
        if p.kind is p.VAR_POSITIONAL:
            values.extend(bound.arguments.get(p.name, ()))
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            values.append(bound.arguments[p.name])
    return values


def drop_in_class(package, op, class_name):
    """Returns the drop-in class of op's imported module, named `class_name`."""
    spec = package.ops[op]
    table = spec["module"]
    base = _original(package, op, spec)
    recorded_init = ast.literal_eval(table.get("init", "[]"))
    init_signature = inspect.signature(base.__init__)
    forward_signature = inspect.signature(base.forward)
    arguments = table.get("arguments", [])
    sources = spec["sources"]  # per op input: {"argument": i} or {"parameter": "a.b"}
    multiple = table.get("outputs", 1) > 1
    trained_in_eval = bool(table.get("eval", False))
    qualified = f"{package.name}.{class_name}"

    def __init__(self, *args, **kwargs):
        base.__init__(self, *args, **kwargs)
        want = _bound(init_signature, self, recorded_init, {})
        got = _bound(init_signature, self, args, kwargs)
        self._ks_constructed = None if want == got else (
            f"constructed with {_call_text(args, kwargs)}; its kernel holds the constants of "
            f"{table['entry']}{_call_text(recorded_init, {})}")
        self._ks_mode_counts = any(isinstance(m, _MODE_DEPENDENT) for m in self.modules())

    def _ks_inputs(self, args, kwargs):
        """Returns (the op's inputs, None), or (None, why the kernel cannot compute this
        call)."""
        if self._ks_constructed:
            return None, self._ks_constructed
        if self._ks_mode_counts and self.training == trained_in_eval:
            mode = "eval" if trained_in_eval else "training"
            return None, f"its kernel computes it in {mode} mode (call .{mode[:5]}())"
        values = list(args) if not kwargs and len(args) == len(arguments) else \
            _bound(forward_signature, self, args, kwargs)
        if values is None or len(values) != len(arguments):
            return None, f"forward takes {len(arguments)} arguments as imported, got {len(args)}"
        for i, a in enumerate(arguments):
            if "value" in a and values[i] != ast.literal_eval(a["value"]):
                return None, (f"argument {i} is {values[i]!r}; its kernel was made for "
                              f"{a['value']}")
        return [values[s["argument"]] if "argument" in s else _tensor_at(self, s["parameter"])
                for s in sources], None

    def forward(self, *args, **kwargs):
        inputs, why = self._ks_inputs(args, kwargs)
        if why is None and (not self.ks_fallback or package.accepts(op, inputs)):
            out = package.overloads[op](*inputs)
            return tuple(out) if multiple else out
        if self.ks_fallback:
            return base.forward(self, *args, **kwargs)
        raise RuntimeError(f"{qualified}: {why}; set .ks_fallback = True to run the original "
                           f"forward then")

    def verify(self, trials=2, seed=20261127):
        """Runs this module's exported forward and its original forward on `trials` sets of
        random arguments (the task's shapes, drawn as the bench worker draws them to verify)
        with this module's own parameters, on its CUDA device, TF32 off; returns a line
        saying they agree, or raises VerificationError naming the first difference."""
        device = next((t.device for t in list(self.parameters()) + list(self.buffers())),
                      torch.device("cuda"))
        if device.type != "cuda":
            raise RuntimeError(f"{qualified}.verify() runs the kernel: move the module to a "
                               f"CUDA device first (.cuda())")
        generator = torch.Generator(device=device)
        generator.manual_seed(seed)
        drawn = {s["name"]: s for s in spec["inputs"]}
        with _float32_is_float32(), torch.no_grad():
            for trial in range(trials):
                tensors = {a["input"]: _ks_module.draw_input(torch, drawn[a["input"]],
                                                             generator, device, "verify")
                           for a in arguments if "input" in a}
                call = _ks_module.call_arguments(torch, table, tensors, device, generator)
                inputs, why = _ks_inputs(self, call, {})
                if why is not None:
                    raise RuntimeError(f"{qualified}: {why}: there is nothing to verify")
                out = package.overloads[op](*inputs)
                problem = package.compare(op, out, base.forward(self, *call),
                                          names=("exported", "original"))
                if problem:
                    raise VerificationError(f"{qualified}: {problem} (trial {trial + 1})",
                                            {op: problem})
        return f"{qualified} agrees with {table['entry']} over {trials} trials"

    cls = type(class_name, (base,), {
        "__init__": __init__, "forward": forward, "verify": verify, "_ks_inputs": _ks_inputs,
        "ks_fallback": False, "__module__": package.name, "__qualname__": class_name,
        "__doc__": (f"{table['entry']} with its forward on kernelskill::{op} (a drop-in: same "
                    f"constructor, parameters and state_dict). " + (base.__doc__ or "")),
    })
    return cls


def _tensor_at(module, path):
    """Returns the parameter or buffer of `module` at `path` ("gn.weight")."""
    try:
        return module.get_parameter(path)
    except AttributeError:
        return module.get_buffer(path)


def _call_text(args, kwargs):
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"({', '.join(parts)})"
