"""The runtime of a package written by `kernelskill export`: its ops registered with PyTorch.

Each task is the custom op kernelskill::<op>, defined here from export.json (its schema: the
task's inputs in order, its outputs), with:

- a fake implementation, so that the op traces under torch.compile and torch.export with no
  GPU and no kernel: it checks the inputs as the kernel does and returns outputs of the task's
  shapes and dtypes on the inputs' device;
- its CUDA implementation in the binding (csrc/ops.cpp, a C++ library registered with
  TORCH_LIBRARY_IMPL): the checks again, then the kernel's ks_forward on PyTorch's current
  stream. The binding and the kernels are loaded from the ahead-of-time build (setup.py) when
  there is one, else built just in time on import where a CUDA device is (cached; _build.py),
  else left for build(). Until they are loaded, a CUDA call of the op says how to build it.
  Backward is not implemented: the op's outputs carry a grad_fn that raises if a gradient is
  asked of them (torch's autogradNotImplementedFallback, registered by the binding);
- the fall back: call(op, args, fallback=True) runs the task's torch expression instead when
  the inputs are not what the kernel was tuned for (shape, dtype, a device other than CUDA),
  with a warning once per signature.
"""

import ctypes
import importlib.machinery
import math
import os
import sys
import warnings

import torch

from . import _build
from . import _ks_module

NAMESPACE = "kernelskill"
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
          "f64": torch.float64, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8}
DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
DTYPE_NAMES[torch.bool] = "bool"


class VerificationError(AssertionError):
    """An op (or a drop-in module) differs from torch beyond its task's tolerance; `results`
    holds every op's verdict (None where it agrees)."""

    def __init__(self, message, results):
        super().__init__(message)
        self.results = results


def describe_spec(spec):
    """Returns "x: f32[4096, 1024]"."""
    return f"{spec['name']}: {spec['dtype']}[{', '.join(str(d) for d in spec['shape'])}]"


def describe_tensor(name, t):
    """Returns "x: f32[16, 8] on cuda:0"."""
    if not isinstance(t, torch.Tensor):
        return f"{name}: {type(t).__name__}"
    dims = ", ".join(str(d) for d in t.shape)
    return f"{name}: {DTYPE_NAMES.get(t.dtype, str(t.dtype))}[{dims}] on {t.device}"


def matches(spec, t):
    """Checks whether tensor `t` has the dtype and shape of `spec` (a bool tensor stands for
    u8: a mask is one byte of 0 or 1 an element, as the kernel reads it)."""
    want = DTYPES[spec["dtype"]]
    if t.dtype != want and not (spec["dtype"] == "u8" and t.dtype == torch.bool):
        return False
    return tuple(t.shape) == tuple(spec["shape"])


class Package:
    """The ops of one exported package, registered with PyTorch on construction."""

    def __init__(self, name, folder):
        self.name = name
        self.folder = folder
        self.record = _build.read_record(folder)
        self.ops = self.record["ops"]
        self.how = None  # how the binding was loaded: "ahead of time", "just in time (...)"
        self.problem = None  # why it is not (None once loaded)
        self.kernel_errors = {}  # op -> why its kernel did not load
        self._expressions = {}
        self._warned = set()
        self._stub = None
        self.library = torch.library.Library(NAMESPACE, "FRAGMENT")
        self.overloads = {}
        for op, spec in self.ops.items():
            try:
                self.library.define(op + spec["schema"])
            except RuntimeError as e:
                raise ImportError(
                    f"{NAMESPACE}::{op} is already defined in this process ({str(e).splitlines()[0]}): "
                    f"another exported package with a task of that name is imported; import one "
                    f"of them") from None
            torch.library.register_fake(f"{NAMESPACE}::{op}", self._fake(op, spec),
                                        lib=self.library)
            self.library.impl(op, self._not_on_cuda(op), "CPU")
            self.overloads[op] = getattr(getattr(torch.ops, NAMESPACE), op).default
            self._expressions[op] = self._compile_expression(op, spec)
        self._install_stub()
        self._load()

    # -- loading ---------------------------------------------------------------------------------

    def _aot_binding(self):
        """Returns the binding setup.py built beside this file, or None."""
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(self.folder, "_C" + suffix)
            if os.path.isfile(path):
                return path
        return None

    def _load(self):
        binding = self._aot_binding()
        if binding is not None:
            kernels = {op: os.path.join(self.folder, "kernels", f"{op}.so") for op in self.ops}
            self._attach(binding, kernels, "ahead of time (setup.py)")
            return
        root = os.path.dirname(self.folder)
        how = (f"build it ahead of time (pip install --no-build-isolation {root}, or python "
               f"setup.py build_ext --inplace there), or call {self.name}.build()")
        if os.environ.get("KERNELSKILL_JIT", "1") == "0":
            self.problem = f"{self.name} is not built (KERNELSKILL_JIT=0): {how}"
        elif not torch.cuda.is_available():
            self.problem = (f"{self.name} is not built: no CUDA device here, so importing did "
                            f"not build it; {how}")
        else:
            try:
                self.build()
            except _build.BuildError as e:
                self.problem = f"{self.name} could not be built on import: {e}"
                warnings.warn(self.problem, stacklevel=3)

    def _install_stub(self):
        """Registers a CUDA implementation that says how to build the package, until the
        binding's own replaces it."""
        self._stub = torch.library.Library(NAMESPACE, "FRAGMENT")
        for op in self.ops:
            self._stub.impl(op, self._not_built(op), "CUDA")

    def _drop_stub(self):
        if self._stub is not None:
            self._stub._destroy()
            self._stub = None

    def _not_built(self, op):
        def not_built(*args):
            raise RuntimeError(f"{NAMESPACE}::{op}: {self.problem}")
        return not_built

    def _attach(self, binding, kernels, how):
        """Loads the binding at `binding` and every kernel of `kernels` into it."""
        self._drop_stub()
        torch.ops.load_library(binding)
        bind = ctypes.CDLL(binding).ks_export_bind
        bind.restype = ctypes.c_int
        bind.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
        self.kernel_errors = {}
        for op, path in kernels.items():
            error = ctypes.create_string_buffer(4096)
            if bind(op.encode(), os.path.abspath(path).encode(), error, len(error)) != 0:
                self.kernel_errors[op] = error.value.decode(errors="replace")
        self.how = how
        self.problem = None

    def build(self, verbose=False):
        """Builds the kernels and the binding just in time (cached by content under
        $KERNELSKILL_EXPORT_CACHE, else ~/.cache/kernelskill/export) and loads them. Needs
        nvcc and a C++ compiler, no GPU. Raises _build.BuildError."""
        if self.how is not None:
            return
        self._drop_stub()
        try:
            print(f"{self.name}: building {len(self.ops)} kernel(s) and the binding (once; "
                  f"cached)", file=sys.stderr)
            binding, kernels, cache = _build.jit_build(
                self.folder, self.record, verbose=verbose,
                log=lambda line: print(f"{self.name}: {line}", file=sys.stderr) if verbose else None)
        except BaseException:
            self._install_stub()
            raise
        self._attach(binding, kernels, f"just in time, cached in {cache}")

    def status(self):
        """Returns {op: "ready (...)" or why it cannot run}."""
        out = {}
        for op in self.ops:
            if self.problem is not None:
                out[op] = self.problem
            elif op in self.kernel_errors:
                out[op] = f"its kernel did not load: {self.kernel_errors[op]}"
            else:
                out[op] = f"ready (built {self.how})"
        return out

    # -- calls -----------------------------------------------------------------------------------

    def check(self, op, args):
        """Raises RuntimeError, as the binding does, when `args` are not the tensors op's
        kernel was tuned and verified for."""
        spec = self.ops[op]
        inputs = spec["inputs"]
        if len(args) != len(inputs):
            raise RuntimeError(f"{NAMESPACE}::{op} takes {len(inputs)} tensors, got {len(args)}")
        for s, t in zip(inputs, args):
            if not isinstance(t, torch.Tensor) or not matches(s, t):
                raise RuntimeError(
                    f"{NAMESPACE}::{op} was tuned and verified for "
                    f"{', '.join(describe_spec(i) for i in inputs)} only; got "
                    f"{describe_tensor(s['name'], t)} (call it with fallback=True to run its "
                    f"torch expression for other shapes and dtypes)")

    def accepts(self, op, args):
        """Checks whether the kernel of `op` can run on `args`: its shapes and dtypes, on one
        CUDA device."""
        inputs = self.ops[op]["inputs"]
        if len(args) != len(inputs):
            return False
        device = None
        for s, t in zip(inputs, args):
            if not isinstance(t, torch.Tensor) or t.device.type != "cuda" or not matches(s, t):
                return False
            if device is not None and t.device != device:
                return False
            device = t.device
        return True

    def call(self, op, args, fallback=False):
        """Runs op on `args`; with `fallback`, runs its torch expression instead where the
        kernel cannot take them."""
        if fallback and not self.accepts(op, args):
            return self.fall_back(op, args)
        return self.overloads[op](*args)

    def fall_back(self, op, args):
        """Runs the torch expression of `op` on `args`, warning once per signature."""
        if not torch.compiler.is_compiling():
            signature = (op, tuple((tuple(t.shape), t.dtype, t.device.type) if isinstance(
                t, torch.Tensor) else type(t) for t in args))
            if signature not in self._warned:
                self._warned.add(signature)
                got = ", ".join(describe_tensor(s["name"], t)
                                for s, t in zip(self.ops[op]["inputs"], args))
                warnings.warn(f"{NAMESPACE}::{op}: its kernel was tuned for "
                              f"{', '.join(describe_spec(s) for s in self.ops[op]['inputs'])}; "
                              f"got {got}: running its torch expression instead", stacklevel=4)
        return self.expression(op)(*args)

    def expression(self, op):
        """Returns the task's torch expression of `op` as a function of its inputs."""
        expression = self._expressions[op]
        if isinstance(expression, str):
            raise RuntimeError(f"{NAMESPACE}::{op}: {expression}")
        return expression

    def expression_or_error(self, op):
        """Returns a function that runs the torch expression of `op` (raising, when called,
        where there is none): an op function's `.torch`."""
        def torch_expression(*args):
            return self.expression(op)(*args)
        return torch_expression

    def _compile_expression(self, op, spec):
        """Returns the torch expression of `op` as a function (compiled once, here, so that
        torch.compile traces a plain call), or why there is none."""
        if not spec.get("torch"):
            return "its task has no torch expression to fall back to"
        names = [s["name"] for s in spec["inputs"]]
        source = f"def {op}_torch({', '.join(names)}):\n    return ({spec['torch']})\n"
        scope = {"torch": torch, "F": torch.nn.functional, "math": math}
        try:
            exec(compile(source, f"<{NAMESPACE}::{op} torch expression>", "exec"), scope)
        except SyntaxError as e:
            return f"its torch expression {spec['torch']!r} does not compile: {e}"
        return scope[f"{op}_torch"]

    def _not_on_cuda(self, op):
        def not_on_cuda(*args):
            got = ", ".join(describe_tensor(s["name"], t)
                            for s, t in zip(self.ops[op]["inputs"], args))
            raise RuntimeError(f"{NAMESPACE}::{op} runs on CUDA tensors; got {got} (move the "
                               f"inputs to the GPU, or call it with fallback=True to run its "
                               f"torch expression there)")
        return not_on_cuda

    def _fake(self, op, spec):
        outputs = spec["outputs"]

        def fake(*args):
            self.check(op, args)
            outs = tuple(args[0].new_empty(o["shape"], dtype=DTYPES[o["dtype"]]) for o in outputs)
            return outs[0] if len(outs) == 1 else outs
        return fake

    # -- checks ----------------------------------------------------------------------------------

    def draw_inputs(self, op, generator, device):
        """Returns fresh inputs of `op` drawn as the bench worker draws them to verify."""
        return [_ks_module.draw_input(torch, s, generator, device, "verify")
                for s in self.ops[op]["inputs"]]

    def compare(self, op, ours, theirs, names=("kernel", "torch")):
        """Returns None when every output of `ours` agrees with `theirs` within the task's
        tolerance, else what differs first."""
        spec = self.ops[op]
        ours = ours if isinstance(ours, (tuple, list)) else (ours,)
        theirs = _ks_module.flat_outputs(torch, theirs)
        if len(ours) != len(theirs):
            return f"{len(ours)} outputs against {len(theirs)}"
        for s, a, b in zip(spec["outputs"], ours, theirs):
            problem = _ks_module.first_difference(torch, a, b, spec["tolerance"], names)
            if problem:
                return f"output {s['name']} differs: {problem}"
        return None

    def verify(self, ops=None, trials=2, seed=20261127, device=None):
        """Runs each op (all, or those of `ops`) against its torch expression on `trials` sets
        of random inputs drawn as the bench worker draws them, on a CUDA device, TF32 off;
        returns {op: "agrees ..."} or raises VerificationError naming those that differ."""
        if not torch.cuda.is_available():
            raise RuntimeError(f"{self.name}.verify() runs the kernels: it needs a CUDA device")
        device = torch.device(device or "cuda")
        results = {}
        with _float32_is_float32(), torch.no_grad():
            for op in ops or list(self.ops):
                if isinstance(self._expressions[op], str):
                    results[op] = f"not compared: {self._expressions[op]}"
                    continue
                generator = torch.Generator(device=device)
                generator.manual_seed(seed)
                problem = None
                for trial in range(trials):
                    args = self.draw_inputs(op, generator, device)
                    problem = self.compare(op, self.overloads[op](*args),
                                           self.expression(op)(*args))
                    if problem:
                        problem = f"{problem} (trial {trial + 1} of {trials})"
                        break
                results[op] = problem
        failed = {op: p for op, p in results.items() if p and not p.startswith("not compared")}
        if failed:
            raise VerificationError("; ".join(f"{NAMESPACE}::{op}: {p}" for op, p in failed.items()),
                                    results)
        return {op: p or f"agrees with its torch expression over {trials} trials"
                for op, p in results.items()}

    def module_class(self, op, class_name):
        """Returns the drop-in nn.Module of an imported task (_modules.py)."""
        from . import _modules
        return _modules.drop_in_class(self, op, class_name)


class _float32_is_float32:
    """Turns TF32 off while a check runs (a float32 task's tolerance fails TF32), then back."""

    def __enter__(self):
        self.saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    def __exit__(self, *exc):
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = self.saved
