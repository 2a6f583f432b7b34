#!/usr/bin/env python3
"""Turns PyTorch code into kernelskill task manifests: a KernelBench-format problem file (a
`class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`), a folder of them, or
`FILE.py:NAME` (any nn.Module class or function of the user's own code, with example inputs
given on the command line). `kernelskill import` runs this and then checks every manifest it
wrote with the engine's own loader; run alone it writes the same files.

Method:
- The module is built and its example inputs drawn on the `meta` device, so no GPU, no data
  and no time go into tensors of KernelBench's sizes (a 15 GB input costs nothing here).
  While `get_inputs()` runs, a TorchFunctionMode follows each tensor's value range (rand:
  [0, 1), randint: its bounds, softmax: (0, 1], ...), which chooses the manifest's `init`.
- torch.export (the training IR, no decompositions) gives the forward as ATen ops over the
  module's parameters, buffers and the user's inputs; Python constants (a slope, eps, a
  scalar argument) are folded into the graph by the trace and become params.
- Lowering walks the graph from its outputs on demand (memoized), so an idiom can claim a
  subgraph before its parts are lowered: `x / norm(x)` is one norm, `flip(cumsum(flip(x)))` a
  reverse scan, `cat(0, cumsum(narrow(x)))` an exclusive one, `triu(A @ B)` a triangular
  product. Pointwise ops are kept as expressions and fused until a non-pointwise op needs a
  tensor: a chain of activations is one elementwise op, a bias and activation after a matmul
  one epilogue node, an elementwise prologue one node before a reduction or a scan.
- The result is one family op (a family manifest) or a small graph of them (a graph
  manifest, docs/tasks.md); parameters and buffers become task inputs (drawn afresh for every
  verification), the module itself is kept in the manifest's `module` table (its source, the
  constructor's arguments, which task input feeds which argument and parameter) so that the
  torch baselines time the module itself and `--verify` checks the reference against it.

An op that no family states is reported with its name and where it was in the module, never
guessed. The output on stdout: with --json one JSON object per problem (what `kernelskill
import` reads), else one line per problem.
"""

import argparse
import ast
import contextlib
import hashlib
import importlib.util
import inspect
import json
import math
import os
import re
import sys
import traceback

try:
    import torch
except ImportError:  # reported by main() with the install command
    torch = None


class ImportFailure(Exception):
    """A problem that cannot be stated as a task; the message says why."""


# -- value ranges of the example inputs ---------------------------------------------------------


class Range:
    """What is known of a tensor's values: bounds (None: unbounded or unknown), integer-valued,
    and whether anything is known at all."""

    def __init__(self, lo=None, hi=None, integer=False, known=True, lo_open=False):
        self.lo, self.hi, self.integer, self.known, self.lo_open = lo, hi, integer, known, lo_open

    @staticmethod
    def unknown():
        return Range(known=False)

    def nonnegative(self):
        return self.known and self.lo is not None and self.lo >= 0

    def positive(self):
        return self.known and self.lo is not None and (self.lo > 0 or (self.lo == 0 and self.lo_open))


def _scale(r, c):
    if not r.known:
        return r
    lo = None if r.lo is None else r.lo * c
    hi = None if r.hi is None else r.hi * c
    if c < 0:
        lo, hi = hi, lo
    return Range(lo, hi, r.integer and float(c).is_integer(), lo_open=r.lo_open and c > 0)


def _product(a, b):
    if not (a.known and b.known) or None in (a.lo, a.hi, b.lo, b.hi):
        if a.nonnegative() and b.nonnegative():
            return Range(0, None)
        return Range.unknown()
    corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return Range(min(corners), max(corners), a.integer and b.integer)


def _sum(a, b):
    if not (a.known and b.known):
        return Range.unknown()
    lo = None if None in (a.lo, b.lo) else a.lo + b.lo
    hi = None if None in (a.hi, b.hi) else a.hi + b.hi
    return Range(lo, hi, a.integer and b.integer)


def _const_range(v):
    return Range(v, v, float(v).is_integer())


class RangeTracker:
    """Follows the value ranges of the tensors `get_inputs()` makes, through the few functions
    problem files use to shape them (a scale, a softmax, a bool cast); anything else is
    unknown, which only means the importer draws normal values (mixed signs)."""

    def __init__(self):
        self.ranges = {}  # id(tensor) -> Range
        self.keep = []    # keeps the tensors alive, so ids stay theirs

    def of(self, value):
        if isinstance(value, bool):
            return Range(int(value), int(value), True)
        if isinstance(value, (int, float)):
            return _const_range(value)
        if torch is not None and isinstance(value, torch.Tensor):
            if id(value) in self.ranges:
                return self.ranges[id(value)]
            if value.dtype == torch.bool:
                return Range(0, 1, True)
        return Range.unknown()

    def record(self, tensor, r):
        if torch is not None and isinstance(tensor, torch.Tensor):
            self.ranges[id(tensor)] = r
            self.keep.append(tensor)

    def infer(self, name, args, kwargs):
        """Returns the range of the result of torch function `name`."""
        a = [self.of(x) for x in args]
        if name in ("rand", "rand_like"):
            return Range(0, 1, lo_open=False)
        if name in ("randn", "randn_like", "empty", "empty_like"):
            return Range(None, None) if name.startswith("randn") else Range.unknown()
        if name in ("randint", "randint_like"):
            ints = [x for x in args if isinstance(x, int) and not isinstance(x, bool)]
            if name == "randint":
                bounds = ints[:2] if len(ints) >= 2 and isinstance(args[1], int) else [0, ints[0]]
            else:
                bounds = ints[:2] if len(ints) >= 2 else [0, ints[0]] if ints else [0, 1]
            low = kwargs.get("low", bounds[0])
            high = kwargs.get("high", bounds[1])
            return Range(low, high - 1, True)
        if name in ("zeros", "zeros_like"):
            return Range(0, 0, True)
        if name in ("ones", "ones_like"):
            return Range(1, 1, True)
        if name in ("full", "full_like") and len(args) >= 2 and isinstance(args[1], (int, float)):
            return _const_range(args[1])
        if name in ("bool",) or (name == "to" and any(x is torch.bool for x in args)):
            return Range(0, 1, True)
        if name in ("float", "double", "half", "to", "contiguous", "clone", "detach", "cuda", "cpu",
                    "view", "reshape", "expand", "unsqueeze", "squeeze", "flatten", "permute",
                    "transpose", "t", "__getitem__", "flip", "repeat", "T", "mT"):
            return a[0] if a else Range.unknown()
        if name in ("triu", "tril"):
            r = a[0]
            return Range(min(r.lo, 0), max(r.hi, 0), r.integer) if r.known and None not in (r.lo, r.hi) else Range.unknown()
        if name in ("mul", "__mul__", "__rmul__", "multiply"):
            return _product(a[0], a[1]) if len(a) > 1 else Range.unknown()
        if name in ("add", "__add__", "__radd__"):
            return _sum(a[0], a[1]) if len(a) > 1 else Range.unknown()
        if name in ("sub", "__sub__"):
            return _sum(a[0], _scale(a[1], -1)) if len(a) > 1 else Range.unknown()
        if name in ("__rsub__",):
            return _sum(a[1], _scale(a[0], -1)) if len(a) > 1 else Range.unknown()
        if name in ("__truediv__", "div") and len(args) > 1 and isinstance(args[1], (int, float)) and args[1] != 0:
            return _scale(a[0], 1.0 / args[1])
        if name in ("softmax", "sigmoid"):
            return Range(0, 1, lo_open=True)
        if name in ("exp",):
            return Range(0, None, lo_open=True)
        if name in ("abs", "square"):
            return Range(0, None)
        if name in ("relu",):
            return Range(0, a[0].hi if a and a[0].known else None)
        if name in ("normalize",):
            return Range(-1, 1)
        if name in ("sqrt",):
            return Range(0, None)
        return Range.unknown()


@contextlib.contextmanager
def tracking_ranges(tracker):
    """Records the value range of every tensor made inside the block (see RangeTracker)."""
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            name = getattr(func, "__name__", str(func))
            try:
                r = tracker.infer(name, list(args), kwargs)
            except Exception:  # a range is a hint; never a failure of the import
                r = Range.unknown()
            if isinstance(result, torch.Tensor):
                tracker.record(result, r)
            return result

    with Mode():
        yield


# -- loading the problem ----------------------------------------------------------------------


def load_python_file(path):
    """Executes the file at `path` as a fresh module (its folder first on sys.path, so that
    it imports its neighbours) and returns it."""
    folder = os.path.dirname(os.path.abspath(path))
    name = "ks_import_" + hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportFailure("not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ImportFailure(f"the file does not run: {type(e).__name__}: {e}") from e
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return module


DTYPE_TEXT = {}  # torch dtype -> manifest dtype; filled once torch is imported


def _dtypes():
    if not DTYPE_TEXT:
        DTYPE_TEXT.update({
            torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
            torch.float64: "f64", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
            torch.bool: "u8",
        })
    return DTYPE_TEXT


INPUT_SPEC = re.compile(r"^\s*(?:(?P<dtype>[a-z0-9]+)\s*)?\[(?P<shape>[0-9,\s]*)\]\s*"
                        r"(?:<\s*(?P<low>-?\d+)\s*,\s*(?P<high>-?\d+)\s*>)?\s*$")

SPEC_DTYPES = {"f32": "float32", "float32": "float32", "float": "float32", "f16": "float16",
               "bf16": "bfloat16", "f64": "float64", "i32": "int32", "i64": "int64",
               "int64": "int64", "long": "int64", "bool": "bool", "u8": "uint8"}


def parse_input_spec(text):
    """Parses `--input f32[32,1024]`, `bool[32,1024]`, `i64[32]<0,10>` into (torch dtype,
    shape, (low, high) or None). Raises ImportFailure with what is wrong."""
    m = INPUT_SPEC.match(text)
    if not m:
        raise ImportFailure(f"--input {text!r}: expected DTYPE[D0,D1,...] (e.g. f32[32,1024], "
                            f"bool[8,16], i64[32]<0,10> for integers drawn from [0, 10))")
    dtype_name = m.group("dtype") or "f32"
    if dtype_name not in SPEC_DTYPES:
        raise ImportFailure(f"--input {text!r}: unknown dtype {dtype_name!r} (one of "
                            f"{', '.join(sorted(SPEC_DTYPES))})")
    dims = [d.strip() for d in m.group("shape").split(",") if d.strip()]
    shape = [int(d) for d in dims]
    if any(d <= 0 for d in shape):
        raise ImportFailure(f"--input {text!r}: every extent must be positive")
    bounds = None
    if m.group("low") is not None:
        bounds = (int(m.group("low")), int(m.group("high")))
        if bounds[1] <= bounds[0]:
            raise ImportFailure(f"--input {text!r}: <low,high> needs low < high")
    return getattr(torch, SPEC_DTYPES[dtype_name]), shape, bounds


class Problem:
    """One problem to import: where it came from and how to build it."""

    def __init__(self, path, entry, label):
        self.path, self.entry, self.label = path, entry, label
        self.init_args = None     # constructor arguments (a list)
        self.eval_mode = False    # --eval: the module in eval mode, as inference runs it
        self.input_specs = None   # for FILE:NAME: parsed --input specs
        self.init_text = None     # for FILE:NAME: --init as given


def task_name_of(text):
    name = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return name or "task"


DROPOUT_IN_TRAINING = ("dropout with p > 0 in training mode (a random op: torch draws a new mask "
                       "every call, so no kernel can match it); import with --eval to take "
                       "the module as inference runs it, where dropout is the identity")


def build(problem, module):
    """Returns (model, example_args, tracker) built on the meta device."""
    tracker = RangeTracker()
    entry = getattr(module, problem.entry, None)
    if entry is None:
        raise ImportFailure(f"the file defines no {problem.entry!r}")
    with torch.device("meta"):
        if problem.init_text is not None:
            try:
                init_args = ast.literal_eval(problem.init_text)
            except (ValueError, SyntaxError) as e:
                raise ImportFailure(f"--init {problem.init_text!r} is not a Python literal: {e}")
            init_args = list(init_args) if isinstance(init_args, (list, tuple)) else [init_args]
        elif hasattr(module, "get_init_inputs"):
            try:
                init_args = list(module.get_init_inputs())
            except Exception as e:
                raise ImportFailure(f"get_init_inputs() failed: {type(e).__name__}: {e}")
        else:
            init_args = []
        problem.init_args = init_args
        if inspect.isclass(entry) and issubclass(entry, torch.nn.Module):
            try:
                model = entry(*init_args)
            except Exception as e:
                # A constructor that reads values (torch.linspace(...)[i].item()) cannot run on
                # the meta device: it runs on the CPU once, and its module moves to meta (the
                # weights are inputs of the task, drawn afresh anyway).
                if "meta" not in str(e):
                    raise ImportFailure(f"{problem.entry}(*{init_args!r}) failed: "
                                        f"{type(e).__name__}: {e}")
                try:
                    with torch.device("cpu"):
                        model = entry(*init_args)
                    model = model.to("meta")
                except Exception as e2:
                    raise ImportFailure(f"{problem.entry}(*{init_args!r}) failed on the meta "
                                        f"device ({type(e).__name__}: {e}) and on the CPU: "
                                        f"{type(e2).__name__}: {e2}")
        elif callable(entry) and not inspect.isclass(entry):
            fn = entry

            class FunctionModule(torch.nn.Module):
                def forward(self, *args):
                    return fn(*args)

            model = FunctionModule()
        else:
            raise ImportFailure(f"{problem.entry!r} is neither an nn.Module class nor a function")
        with tracking_ranges(tracker):
            if problem.input_specs is not None:
                args = []
                for dtype, shape, bounds in problem.input_specs:
                    if bounds is not None:
                        t = torch.randint(bounds[0], bounds[1], shape, dtype=dtype)
                    elif dtype == torch.bool:
                        t = torch.randint(0, 2, shape).bool()
                    else:
                        t = torch.randn(shape, dtype=dtype)
                    args.append(t)
            elif hasattr(module, "get_inputs"):
                try:
                    args = list(module.get_inputs())
                except Exception as e:
                    raise ImportFailure(f"get_inputs() failed: {type(e).__name__}: {e}")
            else:
                raise ImportFailure("no example inputs: the file has no get_inputs() and no "
                                    "--input was given")
    # As the problem leaves it (nn.Module default: training), or in eval mode with --eval:
    # dropout is then the identity and a batch norm reads its running statistics.
    model.train(model.training and not problem.eval_mode)
    return model, args, tracker


def export(model, args):
    """Returns the ExportedProgram of model(*args) (training IR, no decompositions), with
    `ks_scalar_constants`: the value of each 0-dim constant tensor the module made from a
    Python number in forward (torch.tensor(0.5, device=x.device)), by its name in the program;
    lowering takes it as the number, as export folds a scalar argument."""
    # On the meta device such a tensor has no value, so torch.tensor is watched while tracing:
    # a tensor made from a number is remembered with it, and found again among the program's
    # constants (the same object).
    made = []
    original = torch.tensor

    def watched(data, *rest, **options):
        t = original(data, *rest, **options)
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            made.append((t, data))
        return t

    torch.tensor = watched
    try:
        # run_decompositions with an empty table only functionalizes: in-place ops (relu_, a
        # buffer's += 1) become their functional forms, the ops themselves stay as written.
        program = torch.export.export(model, tuple(args), strict=False).run_decompositions({})
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ImportFailure(f"torch.export could not trace the module: {type(e).__name__}: "
                            f"{first[:300]}")
    finally:
        torch.tensor = original
    program.ks_scalar_constants = {
        name: value for name, c in program.constants.items() for (t, value) in made if t is c}
    # One made without a device (torch.tensor(0.5)) is a real CPU tensor, copied as it is lifted.
    for name, c in program.constants.items():
        if name not in program.ks_scalar_constants and isinstance(c, torch.Tensor) and \
                c.device.type != "meta" and c.dim() == 0 and c.dtype != torch.bool:
            program.ks_scalar_constants[name] = c.item()
    return program


# -- the graph being built ----------------------------------------------------------------------

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NUMBER = re.compile(r"^-?[0-9.]+(e[+-]?[0-9]+)?$")

# Names an elementwise expression reserves (functions), which a tensor may not take.
RESERVED = {"abs", "clamp", "cos", "elu", "erf", "exp", "gelu", "gelu_tanh", "hardsigmoid",
            "hardswish", "hardtanh", "leaky_relu", "log", "log1p", "max", "min", "mish", "neg",
            "pow", "relu", "rsqrt", "selu", "sigmoid", "sign", "silu", "sin", "softplus", "sqrt",
            "tanh", "where", "and", "or", "not", "in", "is", "if", "else", "lambda", "True",
            "False", "None", "torch", "F", "math"}


class T:
    """A tensor of the graph: a graph input, an intermediate a node writes, or a view."""

    def __init__(self, name, shape, dtype, contiguous=True):
        self.name, self.shape, self.dtype, self.contiguous = name, tuple(shape), dtype, contiguous


class E:
    """A pointwise expression not yet written to a tensor: its text in the elementwise grammar
    (docs/tasks.md) over the tensors in `leaves`, and the shape it broadcasts to."""

    def __init__(self, text, leaves, shape):
        self.text, self.leaves, self.shape = text, list(dict.fromkeys(leaves)), tuple(shape)
        self.dtype = "f32"


def step_plan(extent, start, end, step):
    """Returns (whole, residue, first, count) for x[start:end:step] along a dim of `extent`
    (start and end already clamped into it): narrow to the first `whole` elements (whole groups
    of `step`), view them as [whole // step, step], take `residue` along the second and `count`
    groups from `first` along the first. Raises ImportFailure where the slice reaches the last
    partial group."""
    count = max(0, -(-(end - start) // step))
    whole = extent // step * step
    if count and start + (count - 1) * step >= whole:
        raise ImportFailure(f"a slice with step {step} that reaches the last {extent - whole} "
                            f"element(s) of a dim of {extent} (not a whole group of {step})")
    return whole, start % step, start // step, count


class Lazy:
    """A permute or flip of a tensor that an op may absorb (a transposed operand of a matmul, a
    reverse scan) before it becomes a strided view."""

    def __init__(self, base, kind, value, shape):
        self.base, self.kind, self.value, self.shape = base, kind, value, tuple(shape)


class Graph:
    """The task being written: its inputs, views and nodes, in the order of the manifest."""

    def __init__(self):
        self.inputs = []       # dicts: name, dtype, shape, init, low, high
        self.views = []        # dicts: name, of, shape|permute|flip|narrow
        self.nodes = []        # dicts: name, family, inputs, outputs, params
        self.tensors = {}      # name -> T
        self.producer = {}     # intermediate name -> node index
        self.used = set()      # names read by a node or a view
        self.node_names = set()
        self.positive = set()  # graph inputs that an op needs positive (log, sqrt, a divisor)
        self.output_views = set()  # views of graph outputs that nodes write through

    def fresh(self, hint, taken=()):
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "t"
        if not IDENT.match(base):
            base = "t_" + base
        if base in RESERVED:
            base += "_"
        name, i = base, 1
        while name in self.tensors or name in self.node_names or name in taken:
            i += 1
            name = f"{base}{i}"
        return name

    def add_input(self, hint, shape, dtype):
        t = T(self.fresh(hint), shape, dtype)
        self.tensors[t.name] = t
        self.inputs.append({"name": t.name, "dtype": dtype, "shape": list(shape)})
        return t

    def add_view(self, of, kind, value, shape):
        self.used.add(of.name)
        t = T(self.fresh(of.name + "_" + {"shape": "view", "permute": "t", "flip": "flip",
                                          "narrow": "part"}[kind]), shape, of.dtype,
              contiguous=(kind == "shape" and of.contiguous))
        self.tensors[t.name] = t
        self.views.append({"name": t.name, "of": of.name, kind: value})
        return t

    def add_node(self, family, hint, inputs, outputs, params):
        """Adds a node reading tensors `inputs` and writing new intermediates `outputs` (a
        list of (hint, shape, dtype)); returns their T."""
        name = self.fresh(hint)
        self.node_names.add(name)
        written = []
        for out_hint, shape, dtype in outputs:
            t = T(self.fresh(out_hint), shape, dtype)
            self.tensors[t.name] = t
            self.producer[t.name] = len(self.nodes)
            written.append(t)
        for t in inputs:
            self.used.add(t.name)
        self.nodes.append({"name": name, "family": family, "inputs": [t.name for t in inputs],
                           "outputs": [t.name for t in written], "params": dict(params)})
        return written

    def rename(self, old, new):
        """Renames tensor `old` (an intermediate) to `new` everywhere."""
        t = self.tensors.pop(old)
        t.name = new
        self.tensors[new] = t
        for node in self.nodes:
            node["inputs"] = [new if n == old else n for n in node["inputs"]]
            node["outputs"] = [new if n == old else n for n in node["outputs"]]
        for view in self.views:
            if view["of"] == old:
                view["of"] = new
        if old in self.producer:
            self.producer[new] = self.producer.pop(old)


def is_leaf_text(text):
    return bool(IDENT.match(text)) or bool(NUMBER.match(text))


def is_call(text):
    """Checks whether `text` is one function call, `name(...)`, whose parentheses close at its end."""
    m = re.match(r"^[A-Za-z_][A-Za-z0-9_]*\(", text)
    if not m or not text.endswith(")"):
        return False
    depth = 0
    for i, c in enumerate(text[m.end() - 1:], m.end() - 1):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and i != len(text) - 1:
            return False
    return True


def paren(text):
    return text if is_leaf_text(text) or is_call(text) else f"({text})"


def number_text(value):
    """Returns `value` as an expression literal (`inf` for an infinity); NaN cannot be one."""
    if isinstance(value, bool):
        return "1.0" if value else "0.0"
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "(-inf)"
    if math.isnan(value):
        raise ImportFailure("a constant NaN in a pointwise op (the elementwise grammar has "
                            "numbers and inf only)")
    text = repr(value)
    return text if value >= 0 else f"({text})"


# -- lowering ATen to family ops ----------------------------------------------------------------


def op_name(node):
    """Returns the ATen op's short name of an fx call ("relu", "mul", "getitem")."""
    target = node.target
    if target is getattr(__import__("operator"), "getitem"):
        return "getitem"
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(target, "__name__", str(target))


def meta_of(node):
    return node.meta.get("val") if hasattr(node, "meta") else None


def shape_of(node):
    v = meta_of(node)
    if v is None or not hasattr(v, "shape"):
        raise ImportFailure(f"no shape known for {node}")
    return tuple(int(d) for d in v.shape)


def dtype_of(node):
    v = meta_of(node)
    return _dtypes().get(v.dtype, str(v.dtype)) if v is not None and hasattr(v, "dtype") else "f32"


def norm_dims(dims, rank):
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    out = sorted(d + rank if d < 0 else d for d in dims)
    return out if out else list(range(rank))


def adjacent(dims):
    return all(b == a + 1 for a, b in zip(dims, dims[1:]))


def arg(node, i, name, default=None):
    """Returns argument `i` (or keyword `name`) of an fx call."""
    if i < len(node.args):
        return node.args[i]
    return node.kwargs.get(name, default)


POINTWISE_UNARY = {
    "relu": "relu({})", "sigmoid": "sigmoid({})", "tanh": "tanh({})", "exp": "exp({})",
    "log": "log({})", "log1p": "log1p({})", "sqrt": "sqrt({})", "rsqrt": "rsqrt({})",
    "abs": "abs({})", "neg": "-{}", "sign": "sign({})", "sin": "sin({})", "cos": "cos({})",
    "erf": "erf({})", "silu": "silu({})", "mish": "mish({})", "hardsigmoid": "hardsigmoid({})",
    "hardswish": "hardswish({})", "selu": "selu({})", "reciprocal": "1.0 / {}",
    "square": "{} ** 2", "expm1": "exp({}) - 1.0", "exp2": "2.0 ** {}", "log2": "log({}) / 0.6931471805599453",
    "log10": "log({}) / 2.302585092994046", "logical_not": "{} == 0.0", "sgn": "sign({})",
    "relu6": "hardtanh({}, 0.0, 6.0)", "softsign": "{0} / (1.0 + abs({0}))",
}
# Ops whose operand must be positive for the result to be finite: their graph inputs are drawn
# positive (init = "positive") so that a verification compares numbers, not NaNs.
NEEDS_POSITIVE = {"log", "log1p", "sqrt", "rsqrt", "log2", "log10", "reciprocal"}
IDENTITY_OPS = {"clone", "contiguous", "detach", "alias", "lift_fresh_copy", "_to_copy", "to",
                "type_as", "float", "dropout", "detach_", "_assert_tensor_metadata", "copy"}
VIEW_OPS = {"view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "flatten", "unflatten",
            "view_as", "reshape_as"}
COMPARISONS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "multiply": "*", "divide": "/",
          "true_divide": "/", "true_div": "/"}


class Lowering:
    """Lowers one exported program into `graph` (see the top of the file)."""

    def __init__(self, program, graph, tracker_ranges):
        self.program = program
        self.graph = graph
        self.values = {}
        self.ranges = tracker_ranges   # placeholder name -> Range
        self.users = {}
        for n in program.graph.nodes:
            for a in n.all_input_nodes:
                self.users.setdefault(a, []).append(n)
        self.notes = []                # what the import ignored or assumed
        self.on_placeholder = None     # placeholder node -> its value (set by the driver)

    # -- values ------------------------------------------------------------------------------

    def value(self, node):
        """Returns the lowered value of fx node (or constant) `node`, lowering it on first use."""
        import torch.fx
        if not isinstance(node, torch.fx.Node):
            return node
        if node not in self.values:
            if node.op == "placeholder":
                self.values[node] = self.on_placeholder(node)
            elif node.op == "call_function":
                self.values[node] = self.lower(node)
            else:
                raise ImportFailure(f"unexpected graph node {node.op} {node.name}")
        return self.values[node]

    def tensor(self, v, hint="t"):
        """Returns `v` as a contiguous tensor of the graph: an expression is written by an
        elementwise node, a lazy permute or flip becomes a strided view copied by the composed
        reference."""
        if isinstance(v, T):
            return v
        if isinstance(v, Lazy):
            kind = v.kind
            return self.graph.add_view(self.tensor(v.base), kind, list(v.value), v.shape)
        if isinstance(v, E):
            if v.text in self.graph.tensors and self.graph.tensors[v.text].shape == v.shape:
                return self.graph.tensors[v.text]
            leaves = [self.graph.tensors[n] for n in v.leaves]
            if not leaves:
                raise ImportFailure(f"a pointwise result made of constants only ({v.text})")
            (t,) = self.graph.add_node("elementwise", "pointwise", leaves,
                                       [(hint, v.shape, "f32")], {"op": v.text})
            return t
        if isinstance(v, (int, float)):
            raise ImportFailure(f"a constant ({v}) where the op needs a tensor")
        raise ImportFailure(f"cannot use {type(v).__name__} as a tensor")

    def expr(self, v):
        """Returns `v` as a pointwise expression (a tensor is its own name)."""
        if isinstance(v, E):
            return v
        if isinstance(v, (bool, int, float)):
            return E(number_text(v), [], ())
        if isinstance(v, Lazy):
            v = self.tensor(v)
        if isinstance(v, T):
            if not v.contiguous:
                v = self.copy(v)
            return E(v.name, [v.name], v.shape)
        raise ImportFailure(f"cannot use {type(v).__name__} in a pointwise op")

    def copy(self, t):
        (out,) = self.graph.add_node("elementwise", "copy", [t], [(t.name + "_c", t.shape, "f32")],
                                     {"op": t.name})
        return out

    def need_positive(self, e):
        for name in e.leaves:
            if any(i["name"] == name for i in self.graph.inputs):
                self.graph.positive.add(name)

    def combine(self, pattern, operands, shape):
        exprs = [self.expr(o) for o in operands]
        texts = [paren(e.text) for e in exprs]
        text = pattern.format(*texts)
        leaves = [leaf for e in exprs for leaf in e.leaves]
        return E(text, leaves, shape)

    # -- dispatch ----------------------------------------------------------------------------

    def lower(self, node):
        name = op_name(node)
        handler = getattr(self, "op_" + name, None)
        if handler is not None:
            return handler(node)
        if name in POINTWISE_UNARY:
            x = self.expr(self.value(node.args[0]))
            if name in NEEDS_POSITIVE:
                self.need_positive(x)
            pattern = POINTWISE_UNARY[name]
            if "{0}" in pattern:
                return self.combine(pattern, [x, x], shape_of(node))
            return self.combine(pattern, [x], shape_of(node))
        if name in IDENTITY_OPS:
            if name == "dropout" and (arg(node, 1, "p", 0.0) not in (0, 0.0)) and arg(node, 2, "train", True):
                raise ImportFailure(DROPOUT_IN_TRAINING)
            src = node.args[0]
            if dtype_of(node) not in ("f32", "u8", "i64", "i32"):
                raise ImportFailure(f"a cast to {dtype_of(node)} (only float32 tasks are imported)")
            return self.value(src)
        if name in VIEW_OPS:
            return self.reshape(self.value(node.args[0]), shape_of(node))
        if name in COMPARISONS:
            return self.combine("{} " + COMPARISONS[name] + " {}",
                                [self.value(node.args[0]), self.value(node.args[1])], shape_of(node))
        if name in BINARY:
            return self.binary(node, BINARY[name])
        if name == "native_dropout" and arg(node, 2, "train", True) and \
                arg(node, 1, "p", 0.0) not in (0, 0.0):
            raise ImportFailure(DROPOUT_IN_TRAINING)
        # Name every op without a rule at once (the first one found, then the rest of the
        # program's), so a report over many problems says what is missing in full.
        missing = [name] + [m for m in self.unknown_ops() if m != name]
        raise ImportFailure("no family states " + ", ".join("aten." + m for m in missing))

    def knows(self, name):
        """Checks whether lowering has a rule for ATen op `name`."""
        return (hasattr(self, "op_" + name) or name in POINTWISE_UNARY or name in IDENTITY_OPS or
                name in VIEW_OPS or name in COMPARISONS or name in BINARY or name == "getitem")

    def unknown_ops(self):
        """Returns the ATen ops of the program that lowering has no rule for, in graph order."""
        names = [op_name(n) for n in self.program.graph.nodes if n.op == "call_function"]
        return list(dict.fromkeys(n for n in names if not self.knows(n)))

    # -- pointwise ---------------------------------------------------------------------------

    def binary(self, node, symbol):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        alpha = node.kwargs.get("alpha", 1)
        if symbol in "+-" and alpha != 1:
            b = self.combine("{} * {}", [b, alpha], shape_of(node))
        if symbol == "/":
            if node.kwargs.get("rounding_mode") is not None:
                raise ImportFailure(f"division with rounding_mode={node.kwargs['rounding_mode']!r}")
            self.need_positive(self.expr(b))
        return self.combine("{} " + symbol + " {}", [a, b], shape_of(node))

    def op_rsub(self, node):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        alpha = arg(node, 2, "alpha", 1)
        if alpha != 1:
            a = self.combine("{} * {}", [a, alpha], shape_of(node))
        return self.combine("{} - {}", [b, a], shape_of(node))

    def op_pow(self, node):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        if isinstance(b, (int, float)) and not float(b).is_integer():
            self.need_positive(self.expr(a))
        if isinstance(b, (int, float)) and float(b) == 2.0:
            return self.combine("{} ** 2", [a], shape_of(node))
        return self.combine("{} ** {}", [a, b], shape_of(node))

    def op_float_power(self, node):
        return self.op_pow(node)

    def minmax(self, node, fn):
        return self.combine(fn + "({}, {})", [self.value(node.args[0]), self.value(node.args[1])],
                            shape_of(node))

    def op_maximum(self, node):
        return self.minmax(node, "max")

    def op_minimum(self, node):
        return self.minmax(node, "min")

    def op_fmax(self, node):
        return self.minmax(node, "max")

    def op_fmin(self, node):
        return self.minmax(node, "min")

    def op_clamp(self, node):
        x = self.value(node.args[0])
        lo, hi = arg(node, 1, "min"), arg(node, 2, "max")
        for bound in (lo, hi):
            if bound is not None and not isinstance(bound, (int, float)):
                raise ImportFailure("clamp with tensor bounds")
        if lo is not None and hi is not None:
            return self.combine("clamp({}, {}, {})", [x, lo, hi], shape_of(node))
        if lo is not None:
            return self.combine("max({}, {})", [x, lo], shape_of(node))
        if hi is not None:
            return self.combine("min({}, {})", [x, hi], shape_of(node))
        return x

    def op_clip(self, node):
        return self.op_clamp(node)

    def op_clamp_min(self, node):
        return self.combine("max({}, {})", [self.value(node.args[0]), self.value(node.args[1])],
                            shape_of(node))

    def op_clamp_max(self, node):
        return self.combine("min({}, {})", [self.value(node.args[0]), self.value(node.args[1])],
                            shape_of(node))

    def op_hardtanh(self, node):
        lo, hi = arg(node, 1, "min_val", -1.0), arg(node, 2, "max_val", 1.0)
        return self.combine("hardtanh({}, {}, {})", [self.value(node.args[0]), lo, hi], shape_of(node))

    def op_leaky_relu(self, node):
        slope = arg(node, 1, "negative_slope", 0.01)
        return self.combine("leaky_relu({}, {})", [self.value(node.args[0]), slope], shape_of(node))

    def op_elu(self, node):
        alpha, scale, input_scale = arg(node, 1, "alpha", 1.0), arg(node, 2, "scale", 1.0), arg(node, 3, "input_scale", 1.0)
        x = self.value(node.args[0])
        if input_scale != 1:
            x = self.combine("{} * {}", [x, input_scale], shape_of(node))
        e = self.combine("elu({}, {})", [x, alpha], shape_of(node))
        return e if scale == 1 else self.combine("{} * {}", [e, scale], shape_of(node))

    def op_celu(self, node):
        alpha = arg(node, 1, "alpha", 1.0)
        x = self.value(node.args[0])
        return self.combine("max({0}, 0.0) + min(0.0, {1} * (exp({0} / {1}) - 1.0))", [x, alpha],
                            shape_of(node))

    def op_gelu(self, node):
        approximate = arg(node, 1, "approximate", "none")
        fn = "gelu_tanh" if approximate == "tanh" else "gelu"
        return self.combine(fn + "({})", [self.value(node.args[0])], shape_of(node))

    def op_softplus(self, node):
        beta, threshold = arg(node, 1, "beta", 1), arg(node, 2, "threshold", 20)
        x = self.value(node.args[0])
        if beta == 1 and threshold == 20:
            return self.combine("softplus({})", [x], shape_of(node))
        return self.combine("where({0} * {1} > {2}, {0}, log1p(exp({0} * {1})) / {1})",
                            [x, beta, threshold], shape_of(node))

    def op_threshold(self, node):
        x, th, value = self.value(node.args[0]), node.args[1], node.args[2]
        return self.combine("where({0} > {1}, {0}, {2})", [x, th, value], shape_of(node))

    def op_where(self, node):
        if len(node.args) < 3:
            raise ImportFailure("where(condition) (the indices form)")
        c, a, b = (self.value(x) for x in node.args[:3])
        return self.combine("where({}, {}, {})", [c, a, b], shape_of(node))

    def op_masked_fill(self, node):
        x, mask, value = (self.value(a) for a in node.args[:3])
        return self.combine("where({}, {}, {})", [mask, value, x], shape_of(node))

    def op_lerp(self, node):
        a, b, w = (self.value(x) for x in node.args[:3])
        return self.combine("{0} + {2} * ({1} - {0})", [a, b, w], shape_of(node))

    def op_addcmul(self, node):
        a, b, c = (self.value(x) for x in node.args[:3])
        v = node.kwargs.get("value", 1)
        return self.combine("{} + {} * {} * {}", [a, v, b, c], shape_of(node))

    def op_logit(self, node):
        x = self.value(node.args[0])
        return self.combine("log({0} / (1.0 - {0}))", [x], shape_of(node))

    # -- views -------------------------------------------------------------------------------

    def reshape(self, v, shape):
        shape = tuple(shape)
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, E):
            if v.shape == shape:
                return v
            leaves = [self.graph.tensors[n] for n in v.leaves]
            if leaves and all(t.shape == v.shape and t.contiguous for t in leaves):
                text = v.text
                names = []
                for t in leaves:
                    view = self.reshape(t, shape)
                    text = re.sub(rf"\b{re.escape(t.name)}\b", view.name, text)
                    names.append(view.name)
                return E(text, names, shape)
            v = self.tensor(v)
        if isinstance(v, Lazy):
            v = self.tensor(v)
        if v.shape == shape:
            return v
        if not v.contiguous:
            v = self.copy(v)
        return self.graph.add_view(v, "shape", list(shape), shape)

    def op_expand(self, node):
        v = self.value(node.args[0])
        e = self.expr(v)
        return E(e.text, e.leaves, shape_of(node))

    def op_expand_as(self, node):
        return self.op_expand(node)

    def op_broadcast_to(self, node):
        return self.op_expand(node)

    def op_broadcast_tensors(self, node):
        shape = shape_of(node.args[0][0]) if False else None
        vals = [self.expr(self.value(a)) for a in node.args[0]]
        out = meta_of(node)
        shapes = [tuple(int(d) for d in t.shape) for t in out]
        return [E(e.text, e.leaves, s) for e, s in zip(vals, shapes)]

    def op_getitem(self, node):
        base = self.value(node.args[0])
        if isinstance(base, (list, tuple)):
            return base[node.args[1]]
        raise ImportFailure("indexing a tensor (getitem)")

    def permuted(self, node, perm):
        v = self.value(node.args[0])
        if list(perm) == list(range(len(perm))):
            return v
        if isinstance(v, E) or (isinstance(v, T) and not v.contiguous) or isinstance(v, Lazy):
            if isinstance(v, Lazy) and v.kind == "permute":
                perm = [v.value[p] for p in perm]
                return Lazy(v.base, "permute", perm, shape_of(node))
            v = self.tensor(v)
            if not v.contiguous:
                v = self.copy(v)
        return Lazy(v, "permute", list(perm), shape_of(node))

    def op_permute(self, node):
        rank = len(shape_of(node))
        return self.permuted(node, [d % rank for d in node.args[1]])

    def op_transpose(self, node):
        rank = len(shape_of(node))
        d0, d1 = node.args[1] % rank, node.args[2] % rank
        perm = list(range(rank))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self.permuted(node, perm)

    def op_t(self, node):
        rank = len(shape_of(node))
        return self.permuted(node, list(range(rank))[::-1])

    def op_numpy_T(self, node):
        return self.op_t(node)

    def op_mT(self, node):
        rank = len(shape_of(node))
        perm = list(range(rank))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        return self.permuted(node, perm)

    def narrowed(self, node, dim, start, length):
        return self.narrowed_value(node.args[0], dim, start, length)

    def narrow_tensor(self, v, shape, dim, start, length):
        """Returns a narrow view of value `v` (of `shape`) along `dim`, copying a base that is
        not contiguous first (a view reads a contiguous tensor)."""
        if start == 0 and length == shape[dim]:
            return v
        t = self.tensor(v)
        if not t.contiguous:
            t = self.copy(t)
        out_shape = list(shape)
        out_shape[dim] = length
        return self.graph.add_view(t, "narrow", [dim, start, length], out_shape)

    def stepped(self, node, dim, start, end, step):
        """Returns x[..., start:end:step, ...] along `dim` as views: the dim's whole groups of
        `step` reshaped into [groups, step], the residue start % step picked along the second,
        the groups start // step onwards along the first (x[:, 1::2] of an even extent is
        x.view(n, h // 2, 2)[:, :, 1])."""
        shape = list(shape_of(node.args[0]))
        whole, residue, first, count = step_plan(shape[dim], start, end, step)
        if count == 0:
            return self.narrowed(node, dim, start, 0)
        v = self.narrow_tensor(self.value(node.args[0]), shape, dim, 0, whole)
        grouped = shape[:dim] + [whole // step, step] + shape[dim + 1:]
        v = self.reshape(v, grouped)
        v = self.narrow_tensor(v, grouped, dim + 1, residue, 1)
        picked = list(grouped)
        picked[dim + 1] = 1
        v = self.narrow_tensor(v, picked, dim, first, count)
        return self.reshape(v, shape[:dim] + [count] + shape[dim + 1:])

    def narrowed_value(self, base, dim, start, length):
        import torch.fx
        v = self.value(base)
        shape = list(shape_of(base))
        if start == 0 and length == shape[dim]:
            return v
        t = self.tensor(v)
        if isinstance(base, torch.fx.Node):
            self.values[base] = t  # written once, whatever else reads it (the other splits)
        return self.narrow_tensor(t, shape, dim, start, length)

    def op_narrow(self, node):
        rank = len(shape_of(node))
        return self.narrowed(node, node.args[1] % rank, node.args[2], node.args[3])

    def op_slice(self, node):
        rank = len(shape_of(node))
        dim = arg(node, 1, "dim", 0) % rank
        extent = shape_of(node.args[0])[dim]
        start, end, step = arg(node, 2, "start"), arg(node, 3, "end"), arg(node, 4, "step", 1)
        start = 0 if start is None else (start + extent if start < 0 else min(start, extent))
        end = extent if end is None else (end + extent if end < 0 else min(end, extent))
        if step != 1:
            return self.stepped(node, dim, start, end, step)
        return self.narrowed(node, dim, start, max(end - start, 0))

    def op_select(self, node):
        rank = len(shape_of(node.args[0]))
        dim, index = node.args[1] % rank, node.args[2]
        index = index + shape_of(node.args[0])[dim] if index < 0 else index
        part = self.narrowed(node, dim, index, 1)
        return self.reshape(self.tensor(part) if not isinstance(part, T) else part, shape_of(node))

    # -- matrix products ---------------------------------------------------------------------

    def operand(self, v):
        """Returns (contiguous tensor, transposed) for a matmul operand: a lazy swap of the last
        two dims is absorbed as a transposed operand."""
        if isinstance(v, Lazy) and v.kind == "permute":
            rank = len(v.value)
            swap = list(range(rank))
            if rank >= 2:
                swap[-1], swap[-2] = swap[-2], swap[-1]
            if rank >= 2 and list(v.value) == swap and v.base.contiguous:
                return v.base, True
        t = self.tensor(v)
        if not t.contiguous:
            t = self.copy(t)
        return t, False

    def product(self, a_value, b_value, shape, alpha=1.0, hint="mm"):
        """Emits A @ B (torch.matmul's semantics) as a matvec or matmul node."""
        a, ta = self.operand(a_value)
        b, tb = self.operand(b_value)
        ra, rb = len(a.shape), len(b.shape)
        params = {}
        if alpha != 1.0:
            params["alpha"] = float(alpha)
        if ra == 1 and rb == 1:
            raise ImportFailure("a dot product of two vectors (matmul of 1-d tensors)")
        # A vector on the right (or a [k, 1] matrix) is a matrix-vector product: memory-bound,
        # its own family.
        if ra == 2 and not params and (rb == 1 or (rb == 2 and not tb and b.shape[1] == 1)):
            if ta:
                params["transpose_a"] = True
            (y,) = self.graph.add_node("matvec", "matvec", [a, b], [("y", shape, "f32")], params)
            return y
        if ra == 1 and rb == 2 and not params:  # x @ B: B^T x, B stored [k, n]
            if tb:
                raise ImportFailure("a vector times a transposed matrix")
            (y,) = self.graph.add_node("matvec", "matvec", [b, a], [("y", shape, "f32")],
                                       {"transpose_a": True})
            return y
        if ra == 1 or rb == 1:
            raise ImportFailure("a batched matrix-vector product")
        if ta:
            params["transpose_a"] = True
        if tb:
            params["transpose_b"] = True
        if rb > 3 or (ra > 3 and rb != 2) or (ra >= 3 and rb >= 3 and a.shape[:-2] != b.shape[:-2]):
            # Batch dims beyond one: folded into one (contiguous operands, so views are free).
            if a.shape[:-2] != b.shape[:-2]:
                raise ImportFailure(f"a batched product with broadcast batch dims "
                                    f"({list(a.shape)} @ {list(b.shape)})")
            batch = math.prod(a.shape[:-2])
            a3 = self.reshape(a, (batch,) + a.shape[-2:])
            b3 = self.reshape(b, (batch,) + b.shape[-2:])
            (c,) = self.graph.add_node("matmul", hint, [a3, b3],
                                       [("c", (batch,) + tuple(shape[-2:]), "f32")], params)
            return self.reshape(c, shape)
        (c,) = self.graph.add_node("matmul", hint, [a, b], [("c", shape, "f32")], params)
        return c

    def op_matmul(self, node):
        return self.product(self.value(node.args[0]), self.value(node.args[1]), shape_of(node))

    def op_mm(self, node):
        return self.op_matmul(node)

    def op_bmm(self, node):
        return self.op_matmul(node)

    def op_mv(self, node):
        return self.op_matmul(node)

    def op_linear(self, node):
        x, w = self.value(node.args[0]), self.value(node.args[1])
        bias = arg(node, 2, "bias")
        rank = len(shape_of(node.args[1]))
        wt = Lazy(self.tensor(w), "permute", list(range(rank))[::-1], shape_of(node.args[1])[::-1])
        y = self.product(x, wt, shape_of(node), hint="linear")
        if bias is None:
            return y
        return self.combine("{} + {}", [y, self.value(bias)], shape_of(node))

    def op_addmm(self, node):
        bias, a, b = (self.value(x) for x in node.args[:3])
        beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
        y = self.product(a, b, shape_of(node), alpha=alpha)
        return self.combine("{} * {} + {}", [bias, beta, y], shape_of(node)) if beta != 1 else \
            self.combine("{} + {}", [bias, y], shape_of(node))

    def op_baddbmm(self, node):
        return self.op_addmm(node)

    def op_einsum(self, node):
        equation = node.args[0].replace(" ", "")
        operands = node.args[1]
        m = re.match(r"^([a-z]+),([a-z]+)->([a-z]+)$", equation)
        if not m or len(operands) != 2:
            raise ImportFailure(f"einsum {equation!r} (only two-operand products are imported)")
        left, right, out = m.groups()
        contracted = [c for c in left if c in right and c not in out]
        if len(contracted) != 1 or len(set(left)) != len(left) or len(set(right)) != len(right):
            raise ImportFailure(f"einsum {equation!r} is not one matrix product")
        k = contracted[0]
        # As a matmul: left = batch.. m k (or k m), right = batch.. k n (or n k), out = batch.. m n.
        batch = [c for c in out if c in left and c in right]
        m_idx = [c for c in left if c not in right]
        n_idx = [c for c in right if c not in left]
        if len(n_idx) != 1 or out != "".join(batch + m_idx + n_idx) or \
                "".join(batch) != left[:len(batch)] or "".join(batch) != right[:len(batch)]:
            raise ImportFailure(f"einsum {equation!r} is not a matmul in torch's layout")
        a, b = self.value(operands[0]), self.value(operands[1])
        a_rest, b_rest = left[len(batch):], right[len(batch):]
        a_shape, b_shape = shape_of(operands[0]), shape_of(operands[1])
        if a_rest != "".join(m_idx) + k:
            if len(m_idx) == 1 and a_rest == k + m_idx[0]:
                a = Lazy(self.tensor(a), "permute", list(range(len(a_shape) - 2)) + [len(a_shape) - 1, len(a_shape) - 2],
                         a_shape[:-2] + (a_shape[-1], a_shape[-2]))
            else:
                raise ImportFailure(f"einsum {equation!r}: the contracted index is not last in A")
        if b_rest != k + n_idx[0]:
            if b_rest == n_idx[0] + k:
                b = Lazy(self.tensor(b), "permute", list(range(len(b_shape) - 2)) + [len(b_shape) - 1, len(b_shape) - 2],
                         b_shape[:-2] + (b_shape[-1], b_shape[-2]))
            else:
                raise ImportFailure(f"einsum {equation!r}: the contracted index is not first in B")
        if batch and len(b_shape) != len(batch) + 2:
            raise ImportFailure(f"einsum {equation!r}")
        return self.product(a, b, shape_of(node))

    def triangle(self, node, which):
        diagonal = arg(node, 1, "diagonal", 0)
        src = node.args[0]
        v = self.value(src)
        if diagonal == 0 and isinstance(v, T) and v.name in self.graph.producer:
            producer = self.graph.nodes[self.graph.producer[v.name]]
            if producer["family"] == "matmul" and len(self.users.get(src, [])) == 1 and \
                    "triangle" not in producer["params"] and len(v.shape) == 2:
                producer["params"]["triangle"] = which
                return v
        raise ImportFailure(f"torch.{'triu' if which == 'upper' else 'tril'} of anything but a "
                            f"matrix product (diagonal 0)")

    def op_triu(self, node):
        return self.triangle(node, "upper")

    def op_tril(self, node):
        return self.triangle(node, "lower")

    def convolution(self, node, dims, transposed, stride, padding, dilation, output_padding,
                    groups):
        """A convolution is the conv family's op (docs/tasks.md): x and the weight as torch
        holds them, its own bias a third input. A pointwise one (1x1 kernel, stride 1, no
        padding, one group, not transposed) stays a matrix product over the channels, W [O, C]
        @ x [N, C, spatial], which the matmul skills run faster than a conv today."""
        x_shape, w_shape = shape_of(node.args[0]), shape_of(node.args[1])
        bias = arg(node, 2, "bias")
        kernel = list(w_shape[2:])
        if len(x_shape) != dims + 2 or len(kernel) != dims:
            raise ImportFailure(f"a {dims}-d convolution of an input {list(x_shape)} (an "
                                f"unbatched input is not imported)")

        def per_dim(v, name):
            v = list(v) if isinstance(v, (list, tuple)) else [v]
            if len(v) == 1:
                v = v * dims
            if len(v) != dims or not all(isinstance(e, int) for e in v):
                raise ImportFailure(f"a convolution's {name} {v!r}")
            return v
        if isinstance(padding, str):
            if padding == "valid":
                padding = [0] * dims
            elif padding == "same":
                total = [d * (k - 1) for d, k in zip(per_dim(dilation, "dilation"), kernel)]
                if any(t % 2 for t in total):
                    raise ImportFailure("padding='same' with an even dilated kernel (torch pads "
                                        "one more on the right; the conv family pads both sides "
                                        "alike)")
                padding = [t // 2 for t in total]
            else:
                raise ImportFailure(f"a convolution's padding {padding!r}")
        stride, padding = per_dim(stride, "stride"), per_dim(padding, "padding")
        dilation, output_padding = per_dim(dilation, "dilation"), per_dim(output_padding, "output_padding")
        pointwise = (not transposed and all(k == 1 for k in kernel) and stride == [1] * dims and
                     padding == [0] * dims and groups == 1)
        if pointwise:
            n, c = x_shape[:2]
            o = w_shape[0]
            spatial = math.prod(x_shape[2:])
            w2 = self.reshape(self.tensor(self.value(node.args[1])), (o, c))
            x3 = self.reshape(self.tensor(self.value(node.args[0])), (n, c, spatial))
            y = self.product(w2, x3, (n, o, spatial), hint="pointwise_conv")
            y = self.reshape(y, shape_of(node))
            if bias is None:
                return y
            b = self.reshape(self.tensor(self.value(bias)), (o,) + (1,) * dims)
            return self.combine("{} + {}", [y, b], shape_of(node))
        inputs = [self.contiguous_input(self.value(node.args[0])),
                  self.contiguous_input(self.value(node.args[1]), "w")]
        if bias is not None:
            inputs.append(self.contiguous_input(self.value(bias), "b"))

        def value(v):
            return v[0] if all(e == v[0] for e in v) else v
        params = {}
        if transposed:
            params["transposed"] = True
        for key, v, default in (("stride", stride, 1), ("padding", padding, 0),
                                ("dilation", dilation, 1), ("output_padding", output_padding, 0)):
            if v != [default] * dims:
                params[key] = value(v)
        if groups != 1:
            params["groups"] = groups
        hint = f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
        (y,) = self.graph.add_node("conv", hint, inputs, [("y", shape_of(node), "f32")], params)
        return y

    def standard_conv(self, node, dims):
        # aten.conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups)
        return self.convolution(node, dims, False, arg(node, 3, "stride", 1),
                                arg(node, 4, "padding", 0), arg(node, 5, "dilation", 1), 0,
                                arg(node, 6, "groups", 1))

    def transposed_conv(self, node, dims):
        # aten.conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding,
        # groups, dilation)
        return self.convolution(node, dims, True, arg(node, 3, "stride", 1),
                                arg(node, 4, "padding", 0), arg(node, 7, "dilation", 1),
                                arg(node, 5, "output_padding", 0), arg(node, 6, "groups", 1))

    def op_conv1d(self, node):
        return self.standard_conv(node, 1)

    def op_conv2d(self, node):
        return self.standard_conv(node, 2)

    def op_conv3d(self, node):
        return self.standard_conv(node, 3)

    def op_conv_transpose1d(self, node):
        return self.transposed_conv(node, 1)

    def op_conv_transpose2d(self, node):
        return self.transposed_conv(node, 2)

    def op_conv_transpose3d(self, node):
        return self.transposed_conv(node, 3)

    def op_convolution(self, node):
        # aten.convolution(input, weight, bias, stride, padding, dilation, transposed,
        # output_padding, groups); aten._convolution adds flags that do not change the result.
        dims = len(shape_of(node.args[0])) - 2
        return self.convolution(node, dims, bool(arg(node, 6, "transposed", False)),
                                arg(node, 3, "stride", 1), arg(node, 4, "padding", 0),
                                arg(node, 5, "dilation", 1), arg(node, 7, "output_padding", 0),
                                arg(node, 8, "groups", 1))

    def op__convolution(self, node):
        return self.op_convolution(node)

    # -- along dims --------------------------------------------------------------------------

    def contiguous_input(self, v, hint="x"):
        t = self.tensor(v, hint)
        return self.copy(t) if not t.contiguous else t

    def operands(self, v, shape):
        """Returns what a reduce or scan over `v` (of `shape`) reads and its params: a pointwise
        expression is its params.map over the expression's tensors, computed as the op reads
        them (docs/tasks.md), so it is never written out and read back; anything else is one
        contiguous input."""
        if isinstance(v, E) and v.leaves and tuple(v.shape) == tuple(shape) and \
                v.text not in self.graph.tensors:
            return [self.graph.tensors[n] for n in v.leaves], {"map": v.text}
        return [self.contiguous_input(v)], {}

    def dims_param(self, dims):
        return {"dim": dims[0]} if len(dims) == 1 else {"dims": list(dims)}

    def reduction(self, node, op, dims_arg, keepdim, src=None, out_dtype="f32"):
        src = node.args[0] if src is None else src
        in_shape = shape_of(src)
        dims = norm_dims(dims_arg, len(in_shape))
        if math.prod(in_shape[d] for d in dims) == 1 and op in ("sum", "mean", "max", "min",
                                                                 "prod", "logsumexp"):
            # Over extents of 1 a reduction is its input (level 2 chains them after a keepdim).
            return self.reshape(self.value(src), self.reduced_shape(in_shape, dims, keepdim))
        if not adjacent(dims):
            raise ImportFailure(f"a {op} over dims {dims} that are not adjacent")
        xs, mapped = self.operands(self.value(src), in_shape)
        params = {"op": op}
        params.update(self.dims_param(dims))
        if keepdim:
            params["keepdim"] = True
        params.update(mapped)
        (y,) = self.graph.add_node("reduce", op, xs, [(op, shape_of(node) if not isinstance(meta_of(node), (list, tuple)) else self.reduced_shape(in_shape, dims, keepdim), out_dtype)], params)
        return y

    @staticmethod
    def reduced_shape(shape, dims, keepdim):
        return tuple(1 if i in dims else d for i, d in enumerate(shape)) if keepdim else \
            tuple(d for i, d in enumerate(shape) if i not in dims)

    def op_sum(self, node):
        return self.reduction(node, "sum", arg(node, 1, "dim"), arg(node, 2, "keepdim", False))

    def op_mean(self, node):
        return self.reduction(node, "mean", arg(node, 1, "dim"), arg(node, 2, "keepdim", False))

    def op_prod(self, node):
        return self.reduction(node, "prod", arg(node, 1, "dim"), arg(node, 2, "keepdim", False))

    def op_amax(self, node):
        return self.reduction(node, "max", arg(node, 1, "dim"), arg(node, 2, "keepdim", False))

    def op_amin(self, node):
        return self.reduction(node, "min", arg(node, 1, "dim"), arg(node, 2, "keepdim", False))

    def op_logsumexp(self, node):
        return self.reduction(node, "logsumexp", arg(node, 1, "dim"), arg(node, 2, "keepdim", False))

    def arg_reduction(self, node, op):
        dim = arg(node, 1, "dim")
        keepdim = arg(node, 2, "keepdim", False)
        if dim is None:
            raise ImportFailure(f"{op} over the flattened tensor (dim=None)")
        return self.reduction(node, op, dim, keepdim, out_dtype="i64")

    def op_argmax(self, node):
        return self.arg_reduction(node, "argmax")

    def op_argmin(self, node):
        return self.arg_reduction(node, "argmin")

    def value_and_index(self, node, value_op, index_op):
        """max.dim / min.dim: (values, indices), each lowered only if used."""
        if len(node.args) < 2 and "dim" not in node.kwargs:
            return self.reduction(node, value_op, None, False)
        dim, keepdim = arg(node, 1, "dim"), arg(node, 2, "keepdim", False)
        uses = {u.args[1] for u in self.users.get(node, [])
                if op_name(u) == "getitem" and self.users.get(u)}
        out = [None, None]
        if 0 in uses:
            out[0] = self.reduction(node, value_op, dim, keepdim)
        if 1 in uses:
            out[1] = self.reduction(node, index_op, dim, keepdim, out_dtype="i64")
        return out

    def op_max(self, node):
        if len(node.args) >= 2 and not isinstance(node.args[1], int):
            return self.minmax(node, "max")
        return self.value_and_index(node, "max", "argmax")

    def op_min(self, node):
        if len(node.args) >= 2 and not isinstance(node.args[1], int):
            return self.minmax(node, "min")
        return self.value_and_index(node, "min", "argmin")

    def op_linalg_vector_norm(self, node):
        ord_ = arg(node, 1, "ord", 2)
        dims, keepdim = arg(node, 2, "dim"), arg(node, 3, "keepdim", False)
        x = self.value(node.args[0])
        shape = shape_of(node.args[0])
        if ord_ == 2:
            squares = self.combine("{} ** 2", [x], shape)
        elif ord_ == 1:
            squares = self.combine("abs({})", [x], shape)
        else:
            raise ImportFailure(f"a vector norm of order {ord_}")
        total = self.reduce_value(squares, shape, "sum", dims, keepdim)
        return self.combine("sqrt({})", [total], shape_of(node)) if ord_ == 2 else total

    def op_norm(self, node):
        p = arg(node, 1, "p", 2)
        if p == "fro":
            p = 2
        return self.op_linalg_vector_norm(type("N", (), {"args": (node.args[0], p) + tuple(node.args[2:]), "kwargs": node.kwargs})())

    def reduce_value(self, v, shape, op, dims_arg, keepdim):
        dims = norm_dims(dims_arg, len(shape))
        if not adjacent(dims):
            raise ImportFailure(f"a {op} over dims {dims} that are not adjacent")
        xs, mapped = self.operands(v, shape)
        params = {"op": op}
        params.update(self.dims_param(dims))
        if keepdim:
            params["keepdim"] = True
        params.update(mapped)
        (y,) = self.graph.add_node("reduce", op, xs, [(op, self.reduced_shape(shape, dims, keepdim), "f32")], params)
        return y

    def op_var(self, node):
        raise ImportFailure("var/std (no family states a variance yet)")

    def op_std(self, node):
        return self.op_var(node)

    def op_softmax(self, node):
        return self.softmax(node, "softmax")

    def op__softmax(self, node):
        return self.softmax(node, "softmax")

    def op_log_softmax(self, node):
        return self.softmax(node, "log_softmax")

    def op__log_softmax(self, node):
        return self.softmax(node, "log_softmax")

    def softmax(self, node, op):
        shape = shape_of(node)
        dim = node.args[1] % len(shape)
        x = self.contiguous_input(self.value(node.args[0]))
        (y,) = self.graph.add_node("softmax", op, [x], [(op, shape, "f32")], {"op": op, "dim": dim})
        return y

    def op_cumsum(self, node):
        return self.scan(node, "cumsum")

    def op_cumprod(self, node):
        return self.scan(node, "cumprod")

    # -- normalizations ----------------------------------------------------------------------

    def op_layer_norm(self, node):
        x = self.contiguous_input(self.value(node.args[0]))
        normalized = list(node.args[1])
        weight, bias = arg(node, 2, "weight"), arg(node, 3, "bias")
        eps = arg(node, 4, "eps", 1e-5)
        rank = len(x.shape)
        dims = list(range(rank - len(normalized), rank))
        params = {"op": "layer", "eps": float(eps)}
        params.update(self.dims_param(dims))
        inputs = [x]
        if weight is not None and bias is not None:
            params["affine"] = True
            inputs += [self.contiguous_input(self.value(weight)), self.contiguous_input(self.value(bias))]
        (y,) = self.graph.add_node("norm", "layer_norm", inputs, [("y", x.shape, "f32")], params)
        if (weight is None) != (bias is None):
            extra = weight if weight is not None else bias
            return self.combine("{} * {}" if weight is not None else "{} + {}",
                                [y, self.value(extra)], x.shape)
        return y

    def op_rms_norm(self, node):
        x = self.contiguous_input(self.value(node.args[0]))
        normalized = list(node.args[1])
        weight = arg(node, 2, "weight")
        eps = arg(node, 3, "eps")
        if eps is None:
            eps = float(torch.finfo(torch.float32).eps)
        rank = len(x.shape)
        dims = list(range(rank - len(normalized), rank))
        params = {"op": "rms", "eps": float(eps)}
        params.update(self.dims_param(dims))
        inputs = [x]
        if weight is not None:
            params["affine"] = True
            inputs.append(self.contiguous_input(self.value(weight)))
        (y,) = self.graph.add_node("norm", "rms_norm", inputs, [("y", x.shape, "f32")], params)
        return y

    def channel_norm(self, op, node, x_arg, weight, bias, eps, groups=None):
        x = self.contiguous_input(self.value(x_arg))
        params = {"op": op, "eps": float(eps)}
        if groups is not None:
            params["groups"] = int(groups)
        inputs = [x]
        if weight is not None and bias is not None:
            params["affine"] = True
            inputs += [self.contiguous_input(self.value(weight)), self.contiguous_input(self.value(bias))]
        (y,) = self.graph.add_node("channel_norm", op + "_norm", inputs, [("y", x.shape, "f32")], params)
        if (weight is None) != (bias is None):
            raise ImportFailure(f"{op} norm with a weight but no bias (or a bias but no weight)")
        return y

    def op_group_norm(self, node):
        return self.channel_norm("group", node, node.args[0], arg(node, 2, "weight"),
                                 arg(node, 3, "bias"), arg(node, 4, "eps", 1e-5),
                                 groups=node.args[1])

    def op_batch_norm(self, node):
        return self.batch_norm(node, node.args[0], arg(node, 1, "weight"), arg(node, 2, "bias"),
                               arg(node, 3, "running_mean"), arg(node, 4, "running_var"),
                               arg(node, 5, "training"), arg(node, 7, "eps", 1e-5))

    def op__native_batch_norm_legit_functional(self, node):
        # (input, weight, bias, running_mean, running_var, training, momentum, eps) ->
        # (output, save_mean, save_rstd, new_running_mean, new_running_var): only the output
        # is the op's; the rest update the module's buffers.
        y = self.batch_norm(node, *node.args[:6], node.args[7])
        return [y, None, None, None, None]

    def op__native_batch_norm_legit_no_training(self, node):
        y = self.batch_norm(node, *node.args[:5], False, node.args[6])
        return [y, None, None]

    def op__native_batch_norm_legit(self, node):
        y = self.batch_norm(node, node.args[0], node.args[1], node.args[2], None, None, True,
                            node.args[-1])
        return [y, None, None]

    def batch_norm(self, node, x_arg, weight, bias, running_mean, running_var, training, eps):
        if training or running_mean is None:
            if running_mean is not None:
                self.notes.append("batch norm in training mode: normalized with the batch's "
                                  "statistics; the running statistics it would update are not "
                                  "outputs of the task")
            return self.channel_norm("batch", node, x_arg, weight, bias, eps)
        # Inference: a per-channel affine map of the running statistics, pointwise.
        shape = shape_of(x_arg)
        view = (1, shape[1]) + (1,) * (len(shape) - 2)
        stats = [self.reshape(self.tensor(self.value(t)), view) for t in (running_mean, running_var)]
        self.need_positive(self.expr(stats[1]))
        y = self.combine("({} - {}) / sqrt({} + {})",
                         [self.value(x_arg), stats[0], stats[1], eps], shape)
        if weight is not None:
            y = self.combine("{} * {}", [y, self.reshape(self.tensor(self.value(weight)), view)], shape)
        if bias is not None:
            y = self.combine("{} + {}", [y, self.reshape(self.tensor(self.value(bias)), view)], shape)
        return y

    def op_instance_norm(self, node):
        weight, bias = arg(node, 1, "weight"), arg(node, 2, "bias")
        use_input_stats, eps = arg(node, 5, "use_input_stats", True), arg(node, 7, "eps", 1e-5)
        if not use_input_stats:
            raise ImportFailure("instance norm with running statistics")
        return self.channel_norm("instance", node, node.args[0], weight, bias, eps)

    # -- pooling -----------------------------------------------------------------------------

    def pool(self, node, op, dims):
        x = self.contiguous_input(self.value(node.args[0]))
        def as_list(v, default):
            if v is None or v == []:
                v = default
            v = list(v) if isinstance(v, (list, tuple)) else [v] * dims
            if len(v) == 1:
                v = v * dims
            return v if dims > 1 else v[0]
        kernel = as_list(node.args[1], None)
        stride = as_list(arg(node, 2, "stride"), kernel)
        padding = as_list(arg(node, 3, "padding", 0), 0)
        params = {"op": op, "dims": dims, "kernel_size": kernel, "stride": stride, "padding": padding}
        if op == "max":
            params["dilation"] = as_list(arg(node, 4, "dilation", 1), 1)
            params["ceil_mode"] = bool(arg(node, 5, "ceil_mode", False))
        else:
            params["ceil_mode"] = bool(arg(node, 4, "ceil_mode", False))
            params["count_include_pad"] = bool(arg(node, 5, "count_include_pad", True))
            if arg(node, 6, "divisor_override") is not None:
                raise ImportFailure("avg pool with divisor_override")
        for key in ("dilation",):
            if key in params and (params[key] == 1 or params[key] == [1] * dims):
                del params[key]
        (y,) = self.graph.add_node("pool", f"{op}_pool{dims}d", [x], [("y", shape_of(node), "f32")], params)
        return y

    def op_max_pool1d(self, node):
        return self.pool(node, "max", 1)

    def op_max_pool2d(self, node):
        return self.pool(node, "max", 2)

    def op_max_pool3d(self, node):
        return self.pool(node, "max", 3)

    def op_max_pool2d_with_indices(self, node):
        raise ImportFailure("max pool returning indices")

    def op_avg_pool1d(self, node):
        return self.pool(node, "avg", 1)

    def op_avg_pool2d(self, node):
        return self.pool(node, "avg", 2)

    def op_avg_pool3d(self, node):
        return self.pool(node, "avg", 3)

    def adaptive(self, node, op, dims):
        in_shape = shape_of(node.args[0])
        out_size = node.args[1]
        out_size = list(out_size) if isinstance(out_size, (list, tuple)) else [out_size] * dims
        spatial = in_shape[-dims:]
        if all(o == 1 for o in out_size):
            rank = len(in_shape)
            return self.reduction(node, "mean" if op == "avg" else "max",
                                  list(range(rank - dims, rank)), True)
        if any(s % o for s, o in zip(spatial, out_size)):
            raise ImportFailure(f"adaptive {op} pool to {out_size} from {list(spatial)} (windows "
                                f"of unequal sizes)")
        kernel = [s // o for s, o in zip(spatial, out_size)]
        x = self.contiguous_input(self.value(node.args[0]))
        k = kernel if dims > 1 else kernel[0]
        params = {"op": op, "dims": dims, "kernel_size": k, "stride": k}
        (y,) = self.graph.add_node("pool", f"{op}_pool{dims}d", [x], [("y", shape_of(node), "f32")], params)
        return y

    def op_adaptive_avg_pool1d(self, node):
        return self.adaptive(node, "avg", 1)

    def op_adaptive_avg_pool2d(self, node):
        return self.adaptive(node, "avg", 2)

    def op_adaptive_avg_pool3d(self, node):
        return self.adaptive(node, "avg", 3)

    def op_adaptive_max_pool2d(self, node):
        return self.adaptive(node, "max", 2)

    # -- idioms ------------------------------------------------------------------------------

    @staticmethod
    def strip(node, names):
        import torch.fx
        while isinstance(node, torch.fx.Node) and op_name(node) in names:
            node = node.args[0]
        return node

    def match_norm(self, num, den):
        """Returns the params of a norm family op when num / den is x / norm(x) (l1, l2,
        Frobenius, rms, F.normalize), else None."""
        import torch.fx
        if not isinstance(den, torch.fx.Node):
            return None
        eps = 0.0
        d = self.strip(den, ("expand", "expand_as"))
        if isinstance(d, torch.fx.Node) and op_name(d) in ("clamp_min", "clamp") and \
                isinstance(arg(d, 1, "min"), (int, float)) and arg(d, 2, "max") is None:
            eps = float(arg(d, 1, "min"))
            d = self.strip(d.args[0], ("expand", "expand_as"))
        if not isinstance(d, torch.fx.Node):
            return None
        rank = len(shape_of(num))
        name = op_name(d)
        def dims_of(dim_arg, keepdim):
            dims = norm_dims(dim_arg, rank)
            if not adjacent(dims) or (not keepdim and len(dims) != rank):
                return None
            return dims
        if name == "linalg_vector_norm" and d.args[0] is num and arg(d, 1, "ord", 2) in (1, 2):
            dims = dims_of(arg(d, 2, "dim"), arg(d, 3, "keepdim", False))
            if dims is not None:
                return {"op": "l2" if arg(d, 1, "ord", 2) == 2 else "l1", "dims": dims, "eps": eps}
        if name in ("mean", "sum") and isinstance(d.args[0], torch.fx.Node) and \
                op_name(d.args[0]) == "abs" and d.args[0].args[0] is num:
            dims = dims_of(arg(d, 1, "dim"), arg(d, 2, "keepdim", False))
            if dims is not None:
                params = {"op": "l1", "dims": dims, "eps": eps}
                if name == "mean":
                    params["mean"] = True
                return params
        if name == "sqrt" and eps == 0.0:
            return self.match_rms(num, d.args[0], dims_of)
        return None

    def match_rms(self, num, inner, dims_of):
        """Returns rms params when `inner` is mean(num ** 2 (or num * num), dims) + eps."""
        import torch.fx
        if not (isinstance(inner, torch.fx.Node) and op_name(inner) == "add" and
                isinstance(inner.args[1], (int, float))):
            return None
        m = inner.args[0]
        if not (isinstance(m, torch.fx.Node) and op_name(m) == "mean" and
                isinstance(m.args[0], torch.fx.Node)):
            return None
        sq = m.args[0]
        squares = (op_name(sq) == "pow" and sq.args[0] is num and sq.args[1] == 2) or \
                  (op_name(sq) == "mul" and sq.args[0] is num and sq.args[1] is num)
        dims = dims_of(arg(m, 1, "dim"), arg(m, 2, "keepdim", False)) if squares else None
        return None if dims is None else {"op": "rms", "dims": dims, "eps": float(inner.args[1])}

    def op_mul(self, node):
        # x * rsqrt(mean(x ** 2) + eps): an RMS norm.
        import torch.fx
        for num, other in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
            r = self.strip(other, ("expand", "expand_as"))
            if isinstance(r, torch.fx.Node) and op_name(r) == "rsqrt" and \
                    shape_of(node) == shape_of(num):
                rank = len(shape_of(num))
                def dims_of(dim_arg, keepdim):
                    dims = norm_dims(dim_arg, rank)
                    return dims if adjacent(dims) and keepdim else None
                params = self.match_rms(num, r.args[0], dims_of)
                if params is not None:
                    return self.norm_node(num, params)
        return self.binary(node, "*")

    def norm_node(self, num, params):
        x = self.contiguous_input(self.value(num))
        dims = params.pop("dims")
        params.update(self.dims_param(dims))
        (y,) = self.graph.add_node("norm", params["op"] + "_norm", [x], [("y", x.shape, "f32")], params)
        return y

    def op_div(self, node):
        if isinstance(node.args[1], object):
            params = self.match_norm(node.args[0], node.args[1])
            if params is not None and shape_of(node) == shape_of(node.args[0]):
                return self.norm_node(node.args[0], params)
        return self.binary(node, "/")

    def op_flip(self, node):
        # flip(flip(t)) is t: a reverse scan's outer flip cancels the one scan() leaves.
        v = self.value(node.args[0])
        rank = len(shape_of(node))
        dims = sorted(d % rank for d in node.args[1])
        if isinstance(v, Lazy) and v.kind == "flip" and v.value == dims:
            return v.base
        if not isinstance(v, T) or not v.contiguous:
            v = self.tensor(v)
            if not v.contiguous:
                v = self.copy(v)
        return Lazy(v, "flip", dims, shape_of(node))

    def scan(self, node, op):
        # scan(flip(x)) is flip(reverse scan(x)): the flip it leaves cancels an outer one.
        shape = shape_of(node)
        dim = arg(node, 1, "dim") % len(shape)
        src = self.value(node.args[0])
        params = {"op": op, "dim": dim}
        flipped = isinstance(src, Lazy) and src.kind == "flip" and src.value == [dim]
        if flipped:
            params["reverse"] = True
            src = src.base
        xs, mapped = self.operands(src, shape)
        params.update(mapped)
        (y,) = self.graph.add_node("scan", op, xs, [(op, shape, "f32")], params)
        return Lazy(y, "flip", [dim], shape) if flipped else y

    def is_zeros(self, n):
        import torch.fx
        if not isinstance(n, torch.fx.Node):
            return False
        name = op_name(n)
        if name in ("zeros_like", "zeros", "new_zeros"):
            return True
        return name in ("full", "full_like", "fill") and n.args[-1] == 0

    def op_cat(self, node):
        import torch.fx
        parts = list(node.args[0])
        rank = len(shape_of(node))
        dim = arg(node, 1, "dim", 0) % rank
        if len(parts) == 2 and self.is_zeros(parts[0]) and shape_of(parts[0])[dim] == 1:
            scan = parts[1]
            if isinstance(scan, torch.fx.Node) and op_name(scan) in ("cumsum", "cumprod") and \
                    arg(scan, 1, "dim") % rank == dim and op_name(scan) == "cumsum":
                part = scan.args[0]
                if isinstance(part, torch.fx.Node) and op_name(part) in ("narrow", "slice"):
                    base = part.args[0]
                    n = shape_of(base)[dim]
                    if shape_of(part)[dim] == n - 1 and shape_of(node) == shape_of(base) and \
                            self.starts_at_zero(part, dim, rank):
                        xs, mapped = self.operands(self.value(base), shape_of(base))
                        (y,) = self.graph.add_node("scan", "cumsum", xs, [("cumsum", shape_of(node), "f32")],
                                                   {"op": "cumsum", "dim": dim, "exclusive": True, **mapped})
                        return y
        return self.concatenate([self.value(p) for p in parts], dim, shape_of(node))

    def concatenate(self, values, dim, shape):
        """A concat node over `values` along `dim`: each a contiguous tensor, a repeated one
        read through an alias of its own (a node reads each name once); an empty part (torch
        allows a [0] tensor in a cat) is left out."""
        rank = len(shape)
        parts, seen = [], set()
        for v in values:
            if isinstance(v, (int, float)):
                raise ImportFailure("a number in torch.cat")
            t = self.contiguous_input(v, "part")
            if t.shape == (0,) and rank != 1:
                continue  # torch.cat's legacy empty tensor, of any rank
            if len(t.shape) != rank:
                raise ImportFailure(f"torch.cat of a rank-{len(t.shape)} tensor into rank {rank}")
            if t.shape[dim] == 0:
                continue
            if t.name in seen:
                t = self.graph.add_view(t, "shape", list(t.shape), t.shape)
            seen.add(t.name)
            parts.append(t)
        if not parts:
            raise ImportFailure("torch.cat of empty tensors only")
        if len(parts) == 1:
            return parts[0]
        (y,) = self.graph.add_node("concat", "cat", parts, [("cat", shape, parts[0].dtype)], {"dim": dim})
        return y

    def op_stack(self, node):
        parts = list(node.args[0])
        shape = shape_of(node)
        dim = arg(node, 1, "dim", 0) % len(shape)
        piece = list(shape)
        piece[dim] = 1
        return self.concatenate([self.reshape(self.value(p), piece) for p in parts], dim, shape)

    def pieces(self, node, dim, lengths):
        """Narrow views of node.args[0] along `dim`, one per length, one after another."""
        base = node.args[0]
        out, start = [], 0
        for n in lengths:
            out.append(self.narrowed_value(base, dim, start, n))
            start += n
        return out

    def op_split(self, node):
        shape = shape_of(node.args[0])
        dim = arg(node, 2, "dim", 0) % len(shape)
        size = node.args[1]
        if isinstance(size, (list, tuple)):
            return self.pieces(node, dim, list(size))
        extent = shape[dim]
        return self.pieces(node, dim, [min(size, extent - s) for s in range(0, extent, size)] or [0])

    def op_split_with_sizes(self, node):
        shape = shape_of(node.args[0])
        return self.pieces(node, arg(node, 2, "dim", 0) % len(shape), list(node.args[1]))

    def op_chunk(self, node):
        shape = shape_of(node.args[0])
        dim = arg(node, 2, "dim", 0) % len(shape)
        extent, chunks = shape[dim], node.args[1]
        size = -(-extent // chunks) if extent else 0
        return self.pieces(node, dim, [min(size, extent - s) for s in range(0, extent, size)]
                           if size else [0])

    def op_unbind(self, node):
        shape = shape_of(node.args[0])
        dim = arg(node, 1, "dim", 0) % len(shape)
        rest = shape[:dim] + shape[dim + 1:]
        return [self.reshape(p, rest) for p in self.pieces(node, dim, [1] * shape[dim])]

    @staticmethod
    def starts_at_zero(part, dim, rank):
        if op_name(part) == "narrow":
            return part.args[1] % rank == dim and part.args[2] == 0
        start = arg(part, 2, "start")
        return arg(part, 1, "dim", 0) % rank == dim and (start is None or start == 0)

    # -- losses, gathers, attention -----------------------------------------------------------

    def reduce_loss(self, e, shape, reduction, hint="loss"):
        """Applies a loss's reduction (0 none, 1 mean, 2 sum) to pointwise `e` of `shape`."""
        if reduction == 0:
            return e
        op = "mean" if reduction == 1 else "sum"
        return self.reduce_value(e, shape, op, None, False)

    def op_mse_loss(self, node):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        shape = shape_of(node.args[0])
        return self.reduce_loss(self.combine("({} - {}) ** 2", [a, b], shape), shape, arg(node, 2, "reduction", 1))

    def op_l1_loss(self, node):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        shape = shape_of(node.args[0])
        return self.reduce_loss(self.combine("abs({} - {})", [a, b], shape), shape, arg(node, 2, "reduction", 1))

    def op_smooth_l1_loss(self, node):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        beta = float(arg(node, 3, "beta", 1.0))
        shape = shape_of(node.args[0])
        if beta == 0:
            e = self.combine("abs({} - {})", [a, b], shape)
        else:
            e = self.combine("where(abs({0} - {1}) < {2}, 0.5 * ({0} - {1}) ** 2 / {2}, abs({0} - {1}) - 0.5 * {2})",
                             [a, b, beta], shape)
        return self.reduce_loss(e, shape, arg(node, 2, "reduction", 1))

    def op_huber_loss(self, node):
        a, b = self.value(node.args[0]), self.value(node.args[1])
        delta = float(arg(node, 3, "delta", 1.0))
        shape = shape_of(node.args[0])
        e = self.combine("where(abs({0} - {1}) < {2}, 0.5 * ({0} - {1}) ** 2, {2} * (abs({0} - {1}) - 0.5 * {2}))",
                         [a, b, delta], shape)
        return self.reduce_loss(e, shape, arg(node, 2, "reduction", 1))

    def op_kl_div(self, node):
        inp, target = self.value(node.args[0]), self.value(node.args[1])
        reduction, log_target = arg(node, 2, "reduction", 1), arg(node, 3, "log_target", False)
        shape = shape_of(node.args[0])
        if log_target:
            e = self.combine("exp({1}) * ({1} - {0})", [inp, target], shape)
        else:
            self.need_positive(self.expr(target))
            # torch: xlogy(target, target) - target * input, 0 where target is 0.
            e = self.combine("where({1} > 0.0, {1} * (log({1}) - {0}), 0.0)", [inp, target], shape)
        return self.reduce_loss(e, shape, reduction)

    def op_binary_cross_entropy(self, node):
        p, t = self.value(node.args[0]), self.value(node.args[1])
        if arg(node, 2, "weight") is not None:
            raise ImportFailure("binary cross entropy with weights")
        shape = shape_of(node.args[0])
        e = self.combine("-({1} * max(log({0}), -100.0) + (1.0 - {1}) * max(log(1.0 - {0}), -100.0))", [p, t], shape)
        return self.reduce_loss(e, shape, arg(node, 3, "reduction", 1))

    def op_binary_cross_entropy_with_logits(self, node):
        x, t = self.value(node.args[0]), self.value(node.args[1])
        if arg(node, 2, "weight") is not None or arg(node, 3, "pos_weight") is not None:
            raise ImportFailure("binary cross entropy with weights")
        shape = shape_of(node.args[0])
        e = self.combine("(1.0 - {1}) * {0} + log1p(exp(-abs({0}))) + max(-{0}, 0.0)", [x, t], shape)
        return self.reduce_loss(e, shape, arg(node, 4, "reduction", 1))

    def op_triplet_margin_loss(self, node):
        a, p, n = (self.value(x) for x in node.args[:3])
        margin, norm_p = float(arg(node, 3, "margin", 1.0)), arg(node, 4, "p", 2)
        eps, swap, reduction = float(arg(node, 5, "eps", 1e-6)), arg(node, 6, "swap", False), arg(node, 7, "reduction", 1)
        if norm_p != 2 or swap:
            raise ImportFailure("triplet margin loss other than p = 2 without swap")
        shape = shape_of(node.args[0])
        rank = len(shape)
        def distance(x, y):
            sq = self.combine("({} - {} + {}) ** 2", [x, y, eps], shape)
            return self.reduce_value(sq, shape, "sum", [rank - 1], False)
        d_ap, d_an = distance(a, p), distance(a, n)
        row = shape[:-1]
        e = self.combine("max(sqrt({}) - sqrt({}) + {}, 0.0)", [d_ap, d_an, margin], row)
        return self.reduce_loss(e, row, reduction)

    def op_gather(self, node):
        x = self.contiguous_input(self.value(node.args[0]))
        rank = len(x.shape)
        dim = node.args[1] % rank
        index = self.contiguous_input(self.value(node.args[2]))
        (y,) = self.graph.add_node("gather", "gather", [x, index], [("g", shape_of(node), "f32")], {"dim": dim})
        return y

    def class_scores(self, x_node, target_node, hint):
        """Returns (x, picked): x[i, target[i]] gathered for 2-d scores x [B, C]."""
        x_shape = shape_of(x_node)
        if len(x_shape) != 2:
            raise ImportFailure(f"a classification loss over {len(x_shape)}-d scores (2-d imported)")
        x = self.contiguous_input(self.value(x_node))
        target = self.contiguous_input(self.value(target_node))
        index = self.reshape(target, (x_shape[0], 1))
        (g,) = self.graph.add_node("gather", "gather", [x, index], [("picked", (x_shape[0], 1), "f32")], {"dim": 1})
        return x, self.reshape(g, (x_shape[0],))

    def op_cross_entropy_loss(self, node):
        weight, reduction = arg(node, 2, "weight"), arg(node, 3, "reduction", 1)
        ignore_index, smoothing = arg(node, 4, "ignore_index", -100), arg(node, 5, "label_smoothing", 0.0)
        if weight is not None or smoothing:
            raise ImportFailure("cross entropy with class weights or label smoothing")
        if dtype_of(node.args[1]) not in ("i64", "i32"):
            raise ImportFailure("cross entropy with class probabilities as targets")
        x, picked = self.class_scores(node.args[0], node.args[1], "ce")
        batch = x.shape[0]
        (lse,) = self.graph.add_node("reduce", "logsumexp", [x], [("lse", (batch,), "f32")],
                                     {"op": "logsumexp", "dim": 1})
        self.notes.append(f"targets are drawn from [0, classes): ignore_index ({ignore_index}) "
                          f"never occurs")
        e = self.combine("{} - {}", [lse, picked], (batch,))
        return self.reduce_loss(e, (batch,), reduction)

    def op_nll_loss(self, node):
        weight, reduction = arg(node, 2, "weight"), arg(node, 3, "reduction", 1)
        if weight is not None:
            raise ImportFailure("nll loss with class weights")
        x, picked = self.class_scores(node.args[0], node.args[1], "nll")
        e = self.combine("-{}", [picked], (x.shape[0],))
        return self.reduce_loss(e, (x.shape[0],), reduction)

    def op_nll_loss_nd(self, node):
        return self.op_nll_loss(node)

    def op_scaled_dot_product_attention(self, node):
        q, k, v = node.args[:3]
        mask, dropout = arg(node, 3, "attn_mask"), arg(node, 4, "dropout_p", 0.0)
        causal, scale = arg(node, 5, "is_causal", False), node.kwargs.get("scale")
        if mask is not None or causal:
            raise ImportFailure("attention with a mask (attn_mask or is_causal)")
        if dropout:
            raise ImportFailure("attention with dropout")
        qs, ks = shape_of(q), shape_of(k)
        if qs[:-2] != ks[:-2]:
            raise ImportFailure("attention with grouped or broadcast heads")
        scale = 1.0 / math.sqrt(qs[-1]) if scale is None else float(scale)
        kt = Lazy(self.contiguous_input(self.value(k)), "permute",
                  list(range(len(ks) - 2)) + [len(ks) - 1, len(ks) - 2], ks[:-2] + (ks[-1], ks[-2]))
        scores_shape = qs[:-1] + (ks[-2],)
        scores = self.product(self.value(q), kt, scores_shape, alpha=scale, hint="scores")
        scores = self.tensor(scores)
        (p,) = self.graph.add_node("softmax", "softmax", [scores], [("p", scores_shape, "f32")],
                                   {"op": "softmax", "dim": len(scores_shape) - 1})
        return self.product(p, self.value(v), shape_of(node), hint="attend")

    def op__scaled_dot_product_flash_attention_for_cpu(self, node):
        return self.op_scaled_dot_product_attention(node)


# -- one problem to one manifest ----------------------------------------------------------------

ACCUMULATING = {"matmul", "matvec", "scan"}


def broadcast_shape(shapes):
    """Returns the shape `shapes` broadcast to (numpy's rules, aligned from the last dim)."""
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for d, extent in enumerate((1,) * (rank - len(s)) + tuple(s)):
            out[d] = max(out[d], extent)
    return tuple(out)


def fuse_sibling_reductions(graph):
    """Merges two sums (or two means) over the same dims of the same shape that share an input
    and do not read each other (a triplet loss's two distances of the anchor) into one reduce
    of several maps, "a; b" (docs/tasks.md): one pass reads what they share once."""
    def acted_shape(node):
        shapes = [graph.tensors[n].shape for n in node["inputs"]]
        return broadcast_shape(shapes) if "map" in node["params"] else tuple(shapes[0])

    def key(node):
        p = node["params"]
        if node["family"] != "reduce" or p.get("op") not in ("sum", "mean"):
            return None
        rest = tuple(sorted((k, str(v)) for k, v in p.items() if k != "map"))
        return rest, acted_shape(node), tuple(graph.tensors[node["outputs"][0]].shape)

    i = 0
    while i < len(graph.nodes):
        a = graph.nodes[i]
        for j in range(i + 1, len(graph.nodes)):
            b = graph.nodes[j]
            if key(a) is None or key(a) != key(b) or not set(a["inputs"]) & set(b["inputs"]):
                continue
            # b moves up to a: it must not read what a or a node between them writes.
            between = {n for node in graph.nodes[i:j] for n in node["outputs"]}
            if between & set(b["inputs"]):
                continue
            maps = [node["params"].get("map", node["inputs"][0]) for node in (a, b)]
            a["params"]["map"] = "; ".join(maps)
            a["inputs"] += [n for n in b["inputs"] if n not in a["inputs"]]
            a["outputs"] += b["outputs"]
            del graph.nodes[j]
            graph.producer = {n: k for k, node in enumerate(graph.nodes) for n in node["outputs"]}
            break
        else:
            i += 1


def fuse_epilogues(graph, output_names):
    """A matmul or conv whose output only one elementwise node reads, at the output's shape,
    takes that node's expression as its epilogue over `acc` (docs/tasks.md): a linear layer's
    or a convolution's activation is computed where the output is stored, not in a pass of its
    own. The merged node takes the elementwise node's place, after everything either reads."""
    fused = True
    while fused:
        fused = False
        for m in graph.nodes:
            p = m["params"]
            if m["family"] not in ("matmul", "conv") or "epilogue" in p or "triangle" in p:
                continue
            c = m["outputs"][0]
            readers = [node for node in graph.nodes if c in node["inputs"]]
            if c in output_names or len(readers) != 1 or any(v["of"] == c for v in graph.views):
                continue
            e = readers[0]
            extra = [n for n in e["inputs"] if n != c]
            if e["family"] != "elementwise" or "acc" in extra or set(extra) & set(m["inputs"]) or \
                    tuple(graph.tensors[e["outputs"][0]].shape) != tuple(graph.tensors[c].shape):
                continue
            p["epilogue"] = re.sub(rf"\b{re.escape(c)}\b", "acc", e["params"]["op"])
            if m["family"] == "conv" and len(m["inputs"]) == 3:
                p["bias"] = True  # inputs[2] is the conv's own bias, the epilogue's follow
            merged = dict(m, inputs=m["inputs"] + extra, outputs=e["outputs"], params=p)
            graph.nodes[graph.nodes.index(e)] = merged
            graph.nodes.remove(m)
            del graph.tensors[c]
            graph.producer = {n: k for k, node in enumerate(graph.nodes) for n in node["outputs"]}
            fused = True
            break


def accumulation(graph):
    """Returns (the longest accumulation of any node, whether an output sums without
    normalizing): what the tolerance scales with."""
    longest, sums = 1, False
    for node in graph.nodes:
        p = node["params"]
        ins = [graph.tensors[n].shape for n in node["inputs"]]
        fam = node["family"]
        length = 1
        if fam == "matmul":
            a = ins[0]
            length = a[-2] if p.get("transpose_a") else a[-1]
            sums = True
        elif fam == "matvec":
            a = ins[0]
            length = a[0] if p.get("transpose_a") else a[-1]
            sums = True
        elif fam in ("reduce", "scan", "norm", "softmax"):
            dims = p.get("dims", [p.get("dim", 0)])
            # With params.map the op acts on the shape its operands broadcast to.
            acted = broadcast_shape(ins) if "map" in p else ins[0]
            length = math.prod(acted[d] for d in dims) if acted else 1
            if fam == "scan" or (fam == "reduce" and p["op"] in ("sum", "prod")):
                sums = True
        elif fam == "channel_norm":
            length = math.prod(ins[0][2:]) * (ins[0][0] if p["op"] == "batch" else 1)
        elif fam == "conv":
            length = conv_terms(ins, p)
            sums = True
        longest = max(longest, length)
    return longest, sums


NORMALIZING = {"channel_norm", "norm"}


def conv_terms(ins, params):
    """Returns the most products a conv sums into one output: the input channels of a group
    times the kernel's taps (a transposed conv's strides leave out some of them)."""
    x, w = ins[0], ins[1]
    in_per_group = x[1] // params.get("groups", 1)
    return in_per_group * math.prod(w[2:])


def normalizes_a_long_sum(graph):
    """Whether a normalization follows a product over more than 1000 terms: it divides the
    product's rounding by the spread of its outputs, which can be small next to their size
    (correct float32 kernels of a linear layer of 8192 inputs then a group norm land at up to
    2.4e-5 of the output's norm, measured on an H100)."""
    long_sum = False
    for node in graph.nodes:
        fam = node["family"]
        if fam in NORMALIZING and long_sum:
            return True
        if fam in ("matmul", "matvec"):
            a = graph.tensors[node["inputs"][0]].shape
            transposed = node["params"].get("transpose_a")
            length = (a[-2] if transposed else a[-1]) if fam == "matmul" else \
                (a[0] if transposed else a[-1])
            long_sum = long_sum or length > 1000
        if fam == "conv":
            ins = [graph.tensors[n].shape for n in node["inputs"]]
            long_sum = long_sum or conv_terms(ins, node["params"]) > 1000
    return False


def tolerance_for(graph):
    """float32 accuracy, scaled with the longest accumulation: a float32 kernel lands near
    1e-6 of the output's norm, TF32 near 3e-4, so norm_rel stays well below what a downgrade
    gives; the element bound grows with the sum's length as float32 rounding does, and the
    norm bound with a normalization after a long product (twice the worst error measured)."""
    longest, sums = accumulation(graph)
    families = {n["family"] for n in graph.nodes}
    if families <= {"elementwise"}:
        return {"atol": 1e-6, "rtol": 1e-5, "norm_rel": 1e-6}
    if families <= {"softmax", "elementwise"} and any(
            n["params"].get("op") == "softmax" for n in graph.nodes):
        return {"atol": 1e-8, "rtol": 1e-4, "norm_rel": 1e-5}
    atol = max(1e-6 * longest, 1e-5) if sums else 1e-5
    norm_rel = 1e-5 if longest <= 1e4 else (2e-5 if longest <= 1e5 else 5e-5)
    if normalizes_a_long_sum(graph):
        norm_rel = 5e-5
    return {"atol": float(f"{atol:.1g}"), "rtol": 1e-4 if longest > 1 else 1e-5, "norm_rel": norm_rel}


def init_for(graph, name, dtype, r, index_bound):
    """Returns the manifest's init for graph input `name` (and low, high for integers)."""
    if dtype == "u8":
        return {"init": "randint", "low": 0, "high": 2}
    if dtype in ("i64", "i32"):
        if r.known and r.lo is not None and r.hi is not None and r.integer:
            return {"init": "randint", "low": int(r.lo), "high": int(r.hi) + 1}
        if index_bound is not None:
            return {"init": "randint", "low": 0, "high": int(index_bound)}
        return {"init": "randint", "low": 0, "high": 2}
    if name in graph.positive:
        return {"init": "positive"}
    return {"init": "normal"}


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ImportFailure(f"a non-finite param {v}")
        text = repr(v)
        return text if ("." in text or "e" in text) else text + ".0"
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string is JSON's string, for what we write
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise ImportFailure(f"cannot write {v!r} into a manifest")


def toml_key(k):
    return k if re.match(r"^[A-Za-z0-9_-]+$", k) else json.dumps(k)


def toml_multiline(text):
    if "'''" not in text and "\r" not in text:
        return "'''\n" + text + ("'''" if text.endswith("\n") else "\n'''")
    return json.dumps(text)


def summary_of(program):
    ops = []
    for n in program.graph.nodes:
        if n.op == "call_function" and op_name(n) not in ("getitem",):
            ops.append(op_name(n))
    return ", ".join(dict.fromkeys(ops))


class Imported:
    def __init__(self, name, kind, text, notes):
        self.name, self.kind, self.text, self.notes = name, kind, text, notes


def lower_program(problem, program, tracker_ranges, user_ranges):
    graph = Graph()
    lowering = Lowering(program, graph, tracker_ranges)
    sig = program.graph_signature
    placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
    bindings = {}  # placeholder node -> ("input" | "parameter" | "buffer", name in the module)
    for spec, ph in zip(sig.input_specs, placeholders):
        kind = spec.kind.name.lower()
        bindings[ph] = (kind, spec.target if spec.target is not None else spec.arg.name)
    created = {}

    def placeholder_value(ph):
        val = meta_of(ph)
        if not isinstance(val, torch.Tensor):
            return val  # a Python scalar argument: export folded it into the ops
        kind, target = bindings[ph]
        if kind == "constant_tensor" and target in getattr(program, "ks_scalar_constants", {}):
            return program.ks_scalar_constants[target]  # a number, as a folded scalar is
        if kind in ("constant_tensor", "custom_obj", "token"):
            raise ImportFailure(f"a constant tensor made inside the module ({target}): its "
                                f"values are not known on the meta device")
        hint = ph.name if kind == "user_input" else target.replace(".", "_")
        dtype = _dtypes().get(val.dtype)
        if dtype is None:
            raise ImportFailure(f"input {hint} has dtype {val.dtype}")
        if dtype in ("f16", "bf16", "f64"):
            raise ImportFailure(f"input {hint} is {val.dtype}: only float32 tasks are imported")
        t = graph.add_input(hint, tuple(int(d) for d in val.shape), dtype)
        created[ph] = t
        return t

    lowering.on_placeholder = placeholder_value

    output_node = next(n for n in program.graph.nodes if n.op == "output")
    results = output_node.args[0]
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    user_outputs = [s for s in sig.output_specs if s.kind.name == "USER_OUTPUT"]
    results = results[len(results) - len(user_outputs):] if user_outputs else results
    # Side effects the module has on its buffers (BUFFER_MUTATION outputs) are lowered only to
    # be reported: they are not outputs of the op.
    for spec in sig.output_specs:
        if spec.kind.name == "BUFFER_MUTATION":
            lowering.notes.append(f"ignored the update of buffer {spec.target}")
    out_values = []
    for r in results:
        if r is None:
            raise ImportFailure("the module returns None")
        out_values.append(lowering.value(r))
    if not out_values:
        raise ImportFailure("the module returns no tensor")

    # Outputs: each a tensor a node writes, once.
    out_names = ["y"] if len(out_values) == 1 else [f"y{i}" for i in range(len(out_values))]
    taken_inputs = {i["name"] for i in graph.inputs}
    outputs = []
    written = set()
    for i, v in enumerate(out_values):
        if isinstance(v, (int, float)):
            raise ImportFailure("the module returns a constant")
        t = lowering.tensor(v, "y")
        final = out_names[i]
        while final in taken_inputs or (final in graph.tensors and final != t.name):
            final += "_out"
        view = next((w for w in graph.views if w["name"] == t.name and "shape" in w), None)
        if view is not None and view["of"] in graph.producer and view["of"] not in written:
            # A reshape of what a node writes: the node writes the output through a view of
            # it (docs/tasks.md), no copy.
            base = graph.tensors[view["of"]]
            graph.views.remove(view)
            del graph.tensors[t.name]
            graph.rename(base.name, final + "_" + "x".join(str(d) for d in base.shape))
            graph.views.append({"name": base.name, "of": final, "shape": list(base.shape)})
            graph.output_views.add(base.name)
            written.add(base.name)
            outputs.append({"name": final, "dtype": t.dtype, "shape": list(t.shape)})
            continue
        if t.name not in graph.producer or t.name in written:
            t = lowering.copy(t)
        written.add(t.name)
        if final != t.name:
            graph.rename(t.name, final)
        outputs.append({"name": final, "dtype": t.dtype, "shape": list(t.shape)})

    fuse_sibling_reductions(graph)
    fuse_epilogues(graph, {o["name"] for o in outputs})
    # Drop views nothing reads (an idiom may have made one and then absorbed it).
    read = {n for node in graph.nodes for n in node["inputs"]} | {v["of"] for v in graph.views}
    graph.views = [v for v in graph.views if v["name"] in read or v["name"] in graph.output_views]
    return graph, lowering, bindings, created, outputs


def import_problem(problem):
    """Returns an Imported for `problem`, or raises ImportFailure."""
    module = load_python_file(problem.path)
    model, args, tracker = build(problem, module)
    program = export(model, args)
    user_ranges = [tracker.of(a) for a in args]
    graph, lowering, bindings, created, outputs = lower_program(problem, program, None, user_ranges)
    if not graph.nodes:
        raise ImportFailure("the module computes nothing (its output is an input)")

    # Inputs in a stable order: the user's, in forward's order, then parameters and buffers.
    user_phs = [ph for ph, (k, _) in bindings.items() if k == "user_input"]
    order = {t.name: i for i, t in enumerate(created[ph] for ph in list(bindings) if ph in created)}
    graph.inputs.sort(key=lambda i: order.get(i["name"], 0))
    single = len(graph.nodes) == 1 and not graph.views
    if single:
        node = graph.nodes[0]
        by_name = {i["name"]: i for i in graph.inputs}
        if sorted(node["inputs"]) == sorted(by_name) and len(set(node["inputs"])) == len(node["inputs"]):
            graph.inputs = [by_name[n] for n in node["inputs"]]
        else:
            single = False

    # Inits from the example inputs' ranges; integer indices bounded by what they index.
    index_bounds = {}
    for node in graph.nodes:
        if node["family"] == "gather":
            x, index = node["inputs"][:2]
            base = index
            for v in graph.views:
                if v["name"] == index:
                    base = v["of"]
            index_bounds[base] = graph.tensors[x].shape[node["params"]["dim"]]
    arg_of_input = {}
    for i, ph in enumerate(user_phs):
        if ph in created:
            arg_of_input[created[ph].name] = i
    for spec in graph.inputs:
        r = user_ranges[arg_of_input[spec["name"]]] if spec["name"] in arg_of_input and \
            arg_of_input[spec["name"]] < len(user_ranges) else Range.unknown()
        spec.update(init_for(graph, spec["name"], spec["dtype"], r, index_bounds.get(spec["name"])))

    # The module table: how the torch side calls the module on the task's tensors.
    with open(problem.path, encoding="utf-8") as f:
        source = f.read()
    arguments = []
    for i, ph in enumerate(user_phs):
        val = meta_of(ph)
        if ph in created:
            entry = {"input": created[ph].name}
            if val.dtype == torch.bool:
                entry["dtype"] = "bool"
            arguments.append(entry)
        elif isinstance(val, torch.Tensor):
            arguments.append({"unused": _dtypes().get(val.dtype, "f32"), "shape": [int(d) for d in val.shape]})
        else:
            arguments.append({"value": repr(val)})
    parameters = {target: created[ph].name for ph, (kind, target) in bindings.items()
                  if kind in ("parameter", "buffer") and ph in created}
    module_table = {
        "file": os.path.abspath(problem.path),
        "sha256": hashlib.sha256(source.encode()).hexdigest(),
        "entry": problem.entry,
        "init": repr(list(problem.init_args)),
        "arguments": arguments,
        "parameters": parameters,
        "outputs": len(outputs),
    }
    if not model.training:
        module_table["eval"] = True

    name = problem.label
    about = (f"Imported from {os.path.basename(problem.path)} ({problem.entry}): "
             f"{summary_of(program)}")
    tol = tolerance_for(graph)
    lines = [f"# Written by kernelskill import from {os.path.abspath(problem.path)}; "
             f"edit freely (kernelskill task check lints it).",
             f"name = {toml_value(name)}"]
    def label(n, op_format):
        op = n["params"].get("op")
        shown = op_format.format(op) if isinstance(op, str) and n["family"] != "elementwise" else ""
        return n["family"] + shown + (" + epilogue" if "epilogue" in n["params"] else "")

    if single:
        node = graph.nodes[0]
        lines.append(f"family = {toml_value(node['family'])}")
        kind = label(node, " ({})")
    else:
        lines.append('family = "graph"')
        kind = f"graph of {len(graph.nodes)} ops: " + " -> ".join(label(n, " {}") for n in graph.nodes)
    lines.append(f"about = {toml_value(about)}")
    lines.append("inputs = [")
    for spec in graph.inputs:
        lines.append(f"  {toml_value(spec)},")
    lines.append("]")
    lines.append("outputs = [")
    for spec in outputs:
        lines.append(f"  {toml_value(spec)},")
    lines.append("]")
    if single:
        lines.append(f"params = {toml_value(graph.nodes[0]['params'])}")
    lines.append(f"tolerance = {toml_value(tol)}")
    for note in dict.fromkeys(lowering.notes):
        lines.append(f"# note: {note}")
    lines.append("")
    lines.append("[module]")
    for key, v in module_table.items():
        if key in ("arguments",):
            lines.append(f"{key} = [" + ", ".join(toml_value(a) for a in v) + "]")
        else:
            lines.append(f"{key} = {toml_value(v)}")
    lines.append(f"source = {toml_multiline(source)}")
    if not single:
        for view in graph.views:
            lines.append("")
            lines.append("[[views]]")
            for key, v in view.items():
                lines.append(f"{key} = {toml_value(v)}")
        for node in graph.nodes:
            lines.append("")
            lines.append("[[nodes]]")
            lines.append(f"name = {toml_value(node['name'])}")
            lines.append(f"family = {toml_value(node['family'])}")
            lines.append(f"inputs = {toml_value(node['inputs'])}")
            outs = []
            for o in node["outputs"]:
                if any(o == spec["name"] for spec in outputs) or o in graph.output_views:
                    outs.append(toml_value(o))
                else:
                    t = graph.tensors[o]
                    outs.append(toml_value({"name": o, "dtype": t.dtype, "shape": list(t.shape)}))
            lines.append("outputs = [" + ", ".join(outs) + "]")
            lines.append(f"params = {toml_value(node['params'])}")
    return Imported(name, kind, "\n".join(lines) + "\n", list(dict.fromkeys(lowering.notes)))


# -- the command line ---------------------------------------------------------------------------


def collect_problems(paths, entry_inputs):
    """Returns the problems that `paths` name: files, folders of *.py (sorted), FILE.py:NAME."""
    problems = []
    for p in paths:
        entry = "Model"
        path = p
        m = re.match(r"^(.*\.py):([A-Za-z_][A-Za-z0-9_]*)$", p)
        if m:
            path, entry = m.group(1), m.group(2)
        if os.path.isdir(path) and not m:
            found = sorted((f for f in os.listdir(path) if f.endswith(".py") and not f.startswith("_")),
                           key=natural_key)
            if not found:
                raise SystemExit(f"ks_import: {path}: a folder without problem files (*.py)")
            problems += [Problem(os.path.join(path, f), "Model", task_name_of(f[:-3])) for f in found]
        elif os.path.isfile(path):
            stem = os.path.basename(path)[:-3] if path.endswith(".py") else os.path.basename(path)
            label = task_name_of(stem if not m else f"{stem}_{entry}")
            problems.append(Problem(path, entry, label))
        else:
            raise SystemExit(f"ks_import: {path}: no such file or folder")
    if entry_inputs is not None:
        for problem in problems:
            problem.input_specs = entry_inputs
    seen = {}
    for problem in problems:  # task names unique within the output folder
        base, i = problem.label, 1
        while problem.label in seen:
            i += 1
            problem.label = f"{base}_{i}"
        seen[problem.label] = problem
        if problem.label[0].isdigit() is False and False:
            pass
    return problems


def natural_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]



def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="ks_import.py",
        description="Writes a task manifest per PyTorch problem (KernelBench format, or "
                    "FILE.py:NAME with --input). `kernelskill import` runs this, checks every "
                    "manifest with the engine's loader and writes campaign.toml.")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--input", action="append", metavar="SPEC",
                        help="an example input of FILE.py:NAME, in forward's order: "
                             "DTYPE[D0,D1,...], e.g. f32[32,1024], bool[32,1024], i64[32]<0,10>")
    parser.add_argument("--init", metavar="LITERAL",
                        help="the constructor's arguments of FILE.py:NAME as a Python literal, "
                             "e.g. '[1024, 4]'")
    parser.add_argument("--json", action="store_true", help="one JSON object per problem on stdout")
    parser.add_argument("--eval", action="store_true",
                        help="import every module in eval mode (module.eval()), as inference runs "
                             "it: dropout is the identity, batch norm uses its running statistics")
    args = parser.parse_args(argv)
    if torch is None:
        print("ks_import: torch is not installed for " + sys.executable + "; install it with `" +
              sys.executable + " -m pip install torch` (or name another interpreter with "
              "--python or KS_PYTHON)", file=sys.stderr)
        return 3
    torch.set_grad_enabled(False)
    # Lowering recurses once per op from the outputs: a ResNet-101 chains several hundred.
    # Python 3.11's frames of pure Python code do not grow the C stack, so a deep limit is safe.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    import warnings  # torch's own deprecation notices are not the user's business here
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    try:
        specs = [parse_input_spec(s) for s in args.input] if args.input else None
    except ImportFailure as e:
        print(f"ks_import: {e}", file=sys.stderr)
        return 1
    problems = collect_problems(args.paths, specs)
    for problem in problems:
        problem.eval_mode = args.eval
    if args.init is not None:
        for problem in problems:
            problem.init_text = args.init
    os.makedirs(args.out, exist_ok=True)
    written = []
    failed = 0
    for problem in problems:
        record = {"source": problem.path, "entry": problem.entry, "name": problem.label}
        try:
            imported = import_problem(problem)
            manifest = f"{imported.name}.toml"
            with open(os.path.join(args.out, manifest), "w", encoding="utf-8") as f:
                f.write(imported.text)
            written.append(manifest)
            record.update({"status": "imported", "manifest": os.path.join(args.out, manifest),
                           "kind": imported.kind, "notes": imported.notes})
        except ImportFailure as e:
            failed += 1
            record.update({"status": "failed", "reason": str(e)})
        except Exception as e:  # a bug of ours: say where, never lose the other problems
            failed += 1
            tb = traceback.extract_tb(e.__traceback__)[-1]
            record.update({"status": "failed",
                           "reason": f"internal error {type(e).__name__}: {e} (ks_import.py:{tb.lineno})"})
        if args.json:
            print(json.dumps(record), flush=True)
        else:
            if record["status"] == "imported":
                print(f"imported  {record['name']}: {record['kind']}", flush=True)
            else:
                print(f"not imported  {os.path.basename(problem.path)}: {record['reason']}", flush=True)
    return 0 if failed == 0 else 2


if __name__ == "__main__":
    sys.exit(main())
