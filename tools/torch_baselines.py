#!/usr/bin/env python3
"""Times each task's `torch` expression, eagerly and under torch.compile, the way the bench
worker times a kernel, and writes a baselines file that `kernelskill run` and `kernelskill
eval` put beside their results ("vs eager", "vs compile").

Method (gpu/worker/bench_session.cu is the model; docs/benchmarks.md says the same):

- Inputs: one set per task, built from the manifest's dtypes and shapes with the worker's
  timing distribution: uniform on [0, 1) (KernelBench's torch.rand), except `init = "positive"`
  (uniform on [0.5, 1.5)) and `init = "randint"` (integers on [low, high)). Integer tensors
  drawn from a real distribution are truncated, as the worker's fill does. The worker
  alternates two input sets so that a candidate cannot cache its answer; torch caches
  nothing, and the L2 is flushed anyway, so one set costs the same and halves the memory.
- The expression: the manifest's `torch` field, evaluated with the inputs bound by name and
  `torch`, `F` (torch.nn.functional) and `math` in scope. It becomes the body of a real
  function (`def f(x): return <expression>`), so that torch.compile traces it; an `eval` call
  would be a graph break and compile would silently time eager.
- torch.compile runs in its default mode (inductor, no CUDA graphs), what `torch.compile(f)`
  gives a user and the mode KernelBench's compiled baseline uses; `--compile-mode` picks
  another (max-autotune, reduce-overhead) and the file records which. Compiling happens
  before the warm-up and is not timed (its wall time is recorded).
- Timing: a warm-up of at least 2 calls and `--warmup-ms`, each followed by a device
  synchronization; then batches of calls, each call preceded by an L2 flush (zeroing a buffer
  of 4x the L2 size, at least 64 MiB) and bracketed by CUDA events on the current stream;
  after each batch one synchronization. Batches stop once at least `--min-trials` calls are
  timed and the median moved by less than `--stable-rel` (or the first batch's p10..p90 lies
  within twice that), or `--max-ms` of GPU time was timed, or the wall time reached twice
  that. The median, p10 and p90 interpolate linearly between sorted samples, as the worker's.
- Float32 means float32: TF32 is turned off for matmul and cuDNN (torch's matmul default
  already, cuDNN's not), since the tasks' tolerance would fail it.
- Sanity: the largest absolute difference between eager's and compile's outputs, and whether
  eager's output shapes match the manifest's outputs.
- Memory: kernelbench-l1 tasks hold up to 15 GB; everything of a task (inputs, outputs, the
  compiled function, dynamo's caches) is released and the CUDA cache emptied before the next.
  A task that fails (a bad expression, out of memory, a compile error) gets its error
  message in the file, never a crash; the file is rewritten after every task, so a run that
  is cut off keeps what it measured.

Without torch (no GPU host), --dry-run lists what would be timed: every part but the timing
(manifest reading, input specs, the file's form, the command line) runs and is tested here
(tests/tools/torch_baselines_test.py). With torch but no GPU, --cpu runs the whole path on
the CPU with the host clock (the same test runs it where torch imports): a test of the tool,
never a baseline.
"""

import argparse
import datetime
import gc
import json
import keyword
import math
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ks_module  # noqa: E402  (beside this file: the module of an imported task)

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

FORMAT = "kernelskill-torch-baselines"
VERSION = 1

# Spellings a manifest may use for a dtype (engine/task.cpp), to their canonical names.
DTYPE_SPELLINGS = {
    "float32": "f32", "float": "f32", "float16": "f16", "half": "f16", "bfloat16": "bf16",
    "float64": "f64", "double": "f64", "int32": "i32", "int64": "i64", "uint8": "u8",
}

# The manifest's dtypes (tasks/README.md) and their torch names and sizes in bytes.
DTYPES = {
    "f32": ("float32", 4),
    "f16": ("float16", 2),
    "bf16": ("bfloat16", 2),
    "f64": ("float64", 8),
    "i32": ("int32", 4),
    "i64": ("int64", 8),
    "u8": ("uint8", 1),
}
INITS = ("normal", "uniform", "uniform01", "positive", "randint")


NO_TORCH = "no torch expression (neither the manifest's nor its family's)"


class ManifestError(Exception):
    """A manifest that cannot be read or lacks what timing needs; the message names the file."""


# -- manifests --------------------------------------------------------------------------------


def manifest_paths(paths):
    """Returns the manifests `paths` name: a file as given, a folder's *.toml sorted by name.
    Raises ManifestError for a path that does not exist or a folder without manifests."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".toml"))
            if not found:
                raise ManifestError(f"{p}: a folder without task manifests (*.toml)")
            out.extend(found)
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise ManifestError(f"{p}: no such file or folder")
    return out


def tensor_spec(path, where, table, is_input):
    """Returns {name, dtype, shape, init, low, high} of one manifest tensor table."""
    if not isinstance(table, dict):
        raise ManifestError(f"{path}: {where} is not a table")
    name = table.get("name")
    dtype = table.get("dtype")
    shape = table.get("shape")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{path}: {where} has no name")
    dtype = DTYPE_SPELLINGS.get(dtype, dtype)
    if dtype not in DTYPES:
        raise ManifestError(f"{path}: {where} ({name}): dtype {dtype!r} is not one of "
                            f"{', '.join(DTYPES)}")
    # [] is a scalar (a loss, a full reduction), as the engine's manifests allow.
    if (not isinstance(shape, list) or
            not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)):
        raise ManifestError(f"{path}: {where} ({name}): shape must be an array of positive "
                            f"integers ([] for a scalar)")
    spec = {"name": name, "dtype": dtype, "shape": list(shape)}
    if is_input:
        init = table.get("init", "normal")
        if init not in INITS:
            raise ManifestError(f"{path}: {where} ({name}): init {init!r} is not one of "
                                f"{', '.join(INITS)}")
        spec["init"] = init
        if init == "randint":
            low, high = table.get("low"), table.get("high")
            if not isinstance(low, int) or not isinstance(high, int) or high <= low:
                raise ManifestError(f"{path}: {where} ({name}): randint needs integers "
                                    f"low < high")
            spec["low"], spec["high"] = low, high
    return spec


def read_manifest(path):
    """Returns the task of the manifest at `path`: name, torch expression (None when the
    manifest has none), input and output specs. Raises ManifestError naming `path`."""
    if tomllib is None:
        raise ManifestError(f"{path}: reading manifests needs Python 3.11 or later (tomllib)")
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise ManifestError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ManifestError(f"{path}: not valid TOML: {e}") from None
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{path}: the manifest has no name")
    expr = doc.get("torch")
    if expr is not None and (not isinstance(expr, str) or not expr.strip()):
        raise ManifestError(f"{path}: torch must be a non-empty string")
    inputs = doc.get("inputs")
    outputs = doc.get("outputs")
    if not isinstance(inputs, list) or not inputs:
        raise ManifestError(f"{path}: the manifest has no inputs")
    if not isinstance(outputs, list) or not outputs:
        raise ManifestError(f"{path}: the manifest has no outputs")
    return {
        "name": name,
        "manifest": path,
        "torch": expr,
        "module": read_module(path, doc),
        "inputs": [tensor_spec(path, f"inputs[{i}]", t, True) for i, t in enumerate(inputs)],
        "outputs": [tensor_spec(path, f"outputs[{i}]", t, False) for i, t in enumerate(outputs)],
    }


def read_module(path, doc=None):
    """Returns the manifest's module table (an imported task: the PyTorch module it came
    from, which is its baseline), or None."""
    if doc is None:
        if tomllib is None:
            return None
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError):
            return None
    try:
        return ks_module.module_table(doc)
    except ks_module.ModuleError as e:
        raise ManifestError(f"{path}: {e}") from None


def find_kernelskill(given=None):
    """Returns the kernelskill binary to resolve manifests with: `given` ("none": None), else
    $KS_KERNELSKILL, else `kernelskill` on PATH, else dist/bin/kernelskill of this checkout;
    None if none."""
    if given == "none":
        return None
    if given:
        return given
    for candidate in (os.environ.get("KS_KERNELSKILL"), shutil.which("kernelskill"),
                      os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "dist",
                                   "bin", "kernelskill")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve_with_kernelskill(kernelskill, manifests):
    """Returns the tasks of `manifests` as `kernelskill task show --json` reads them: the
    engine's reading, with the torch expression a family derives (docs/tasks.md). Raises
    ManifestError with kernelskill's message when a manifest does not load."""
    try:
        done = subprocess.run([kernelskill, "task", "show", "--json", *manifests],
                              capture_output=True, text=True, timeout=300)
    except OSError as e:
        raise ManifestError(f"{kernelskill}: cannot run it: {e.strerror}") from None
    if done.returncode != 0:
        raise ManifestError(done.stderr.strip() or
                            f"{kernelskill} task show exited {done.returncode}")
    try:
        listed = json.loads(done.stdout)["tasks"]
    except (ValueError, KeyError, TypeError):
        raise ManifestError(f"{kernelskill} task show --json printed no task list") from None
    tasks = []
    for path, t in zip(manifests, listed):
        tasks.append({
            "name": t["name"],
            "manifest": path,
            "torch": t.get("torch"),
            "module": read_module(path),
            "inputs": [tensor_spec(path, f"inputs[{i}]", s, True)
                       for i, s in enumerate(t["inputs"])],
            "outputs": [tensor_spec(path, f"outputs[{i}]", s, False)
                        for i, s in enumerate(t["outputs"])],
        })
    return tasks


def read_tasks(paths, kernelskill=None):
    """Returns the tasks of every manifest `paths` names, in order: as `kernelskill` reads
    them when given (a family's derived torch expression included), else from the TOML alone
    (then only a manifest's own `torch` is known). Two tasks of one name are an error: the
    baselines file is keyed by task name, as the engine looks them up."""
    manifests = manifest_paths(paths)
    if kernelskill:
        tasks = resolve_with_kernelskill(kernelskill, manifests)
    else:
        tasks = [read_manifest(p) for p in manifests]
    seen = {}
    for t in tasks:
        if t["name"] in seen:
            raise ManifestError(f"{t['manifest']}: task name {t['name']!r} is also the name of "
                                f"{seen[t['name']]}; time one suite per baselines file")
        seen[t["name"]] = t["manifest"]
    return tasks


def timing_distribution(spec):
    """Returns the distribution the bench worker times with for input `spec` (its
    timing_distribution): the input's own for positive and randint, else uniform on [0, 1)."""
    init = spec.get("init", "normal")
    if init == "positive":
        return "uniform on [0.5, 1.5)"
    if init == "randint":
        return f"integers on [{spec['low']}, {spec['high']})"
    return "uniform on [0, 1)"


def signature(specs):
    """Returns "x:f32[4096,393216],y:f32[...]": the names, dtypes and shapes the engine checks
    a baseline against, so that a file timed at other shapes is never compared."""
    return ",".join(f"{s['name']}:{s['dtype']}[{','.join(str(d) for d in s['shape'])}]"
                    for s in specs)


def numel(spec):
    return math.prod(spec["shape"])


def task_bytes(task):
    """Returns the bytes of a task's inputs plus its outputs (one set of each)."""
    return sum(numel(s) * DTYPES[s["dtype"]][1] for s in task["inputs"] + task["outputs"])


def function_source(task):
    """Returns the source of the function that evaluates the task's expression, its inputs
    bound by name. Raises ManifestError for an input name that cannot be a parameter."""
    names = [s["name"] for s in task["inputs"]]
    for n in names:
        if not n.isidentifier() or keyword.iskeyword(n) or n in ("torch", "F", "math"):
            raise ManifestError(f"{task['manifest']}: input name {n!r} cannot be bound in the "
                                f"torch expression")
    return f"def torch_expression({', '.join(names)}):\n    return ({task['torch']})\n"


# -- measurement (pure: the stop rule and the statistics) ------------------------------------


def percentile(sorted_values, p):
    """Returns the p-quantile of `sorted_values`, interpolated linearly (the worker's rule)."""
    if not sorted_values:
        return 0.0
    pos = p * (len(sorted_values) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] * (1 - frac) + sorted_values[hi] * frac


def measure(run_batch, min_trials=10, max_trials=2000, max_ms=2000.0, stable_rel=0.005,
            clock=time.monotonic):
    """Times calls in batches until the worker's stop rule holds and returns {median_ms,
    p10_ms, p90_ms, trials}. `run_batch(n)` makes n timed calls and returns their times in ms.
    """
    times = []
    timed_ms = 0.0
    previous_median = -1.0
    batch = max(min_trials, 10)
    wall_start = clock()
    while True:
        got = run_batch(batch)
        times.extend(got)
        timed_ms += sum(got)
        ordered = sorted(times)
        median = percentile(ordered, 0.5)
        if previous_median < 0:
            # A first batch whose middle 80% lies within twice stable_rel of its median needs
            # no second batch to confirm it.
            stable = percentile(ordered, 0.9) - percentile(ordered, 0.1) <= 2 * stable_rel * median
        else:
            stable = abs(median - previous_median) <= stable_rel * previous_median
        n = len(times)
        wall_ms = (clock() - wall_start) * 1000
        if n >= min_trials and (stable or timed_ms >= max_ms or n >= max_trials or
                                wall_ms >= 2 * max_ms):
            break
        previous_median = median
        # Longer batches for short calls, so the per-batch synchronization stays negligible.
        batch = int(min(max(5.0 / max(median, 1e-3), 10.0), 200.0))
        batch = min(batch, max(max_trials - n, 1))
    ordered = sorted(times)
    return {
        "median_ms": percentile(ordered, 0.5),
        "p10_ms": percentile(ordered, 0.1),
        "p90_ms": percentile(ordered, 0.9),
        "trials": len(ordered),
    }


def head_to_head(rounds):
    """Reads a kernel timed against torch in interleaved rounds: `rounds` maps "kernel" and
    each torch contender ("eager", "compile") to one median per round, each round having timed
    every contender once, back to back. Returns {name: {median_ms, spread}} with, for each
    torch contender, its ratio (torch / kernel: above 1, the kernel is faster) and whether the
    kernel is slower beyond the noise.

    The noise is METHOD.md's: the same version timed several times moves by its spread (largest
    minus smallest round median, over their median); a difference smaller than the larger of
    the two spreads is noise. The kernel is slower beyond the noise when its median exceeds
    torch's by more than that, and it was slower in every round: a drift of the card between
    rounds falls on both sides of each round alike."""
    def summary(values):
        ordered = sorted(values)
        median = percentile(ordered, 0.5)
        return {"median_ms": median,
                "spread": (ordered[-1] - ordered[0]) / median if median > 0 else 0.0,
                "rounds_ms": list(values)}

    kernel = summary(rounds["kernel"])
    out = {"kernel": kernel}
    for name, values in rounds.items():
        if name == "kernel" or not values:
            continue
        theirs = summary(values)
        noise = max(kernel["spread"], theirs["spread"])
        gap = kernel["median_ms"] / theirs["median_ms"] - 1 if theirs["median_ms"] > 0 else 0.0
        every_round = all(k > t for k, t in zip(rounds["kernel"], values))
        theirs["ratio"] = (theirs["median_ms"] / kernel["median_ms"]
                           if kernel["median_ms"] > 0 else None)
        theirs["noise"] = noise
        theirs["slower_beyond_noise"] = gap > noise and every_round
        out[name] = theirs
    return out


# -- the file ----------------------------------------------------------------------------------


def new_document(device, torch_version, cuda_version, method):
    return {
        "format": FORMAT,
        "version": VERSION,
        "device": device,
        "torch_version": torch_version,
        "cuda_version": cuda_version,
        "date": now(),
        "method": method,
        "tasks": {},
    }


def merge_into(path, doc):
    """Returns `doc` with the tasks of the baselines file at `path` it does not time itself
    (--merge). Raises ManifestError when that file is another device's or not a baselines
    file: one file holds one device's numbers."""
    try:
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
    except FileNotFoundError:
        return doc
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: cannot merge into it: {e}") from None
    if not isinstance(old, dict) or old.get("format") != FORMAT:
        raise ManifestError(f"{path}: cannot merge into it: not a {FORMAT} file")
    if old.get("device") != doc["device"]:
        raise ManifestError(f"{path}: cannot merge into it: measured on {old.get('device')!r}, "
                            f"this run is on {doc['device']!r}")
    for name, entry in old.get("tasks", {}).items():
        doc["tasks"].setdefault(name, entry)
    return doc


def write_document(path, doc):
    """Writes `doc` to `path` through a temporary sibling and a rename: a reader (or a run
    cut off mid-write) never sees half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def describe_error(e):
    text = f"{type(e).__name__}: {e}".strip()
    return text.splitlines()[0] if len(text) < 2000 else text[:2000]


# -- torch (GPU host only) ---------------------------------------------------------------------


class TorchTimer:
    """Builds inputs and times expressions on one CUDA device with the worker's method."""

    def __init__(self, torch, device_index, args):
        """Times on CUDA device `device_index`, or with `device_index` None on the CPU with
        the host clock (--cpu: a test of the tool where there is no GPU, never a baseline)."""
        self.torch = torch
        self.args = args
        self.cuda = device_index is not None
        # Float32 stays float32: the tasks' tolerance fails TF32 (norm-relative error ~3e-4),
        # so a baseline that used it would be faster than any kernel allowed to compete.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        l2 = 0
        if self.cuda:
            self.device = torch.device("cuda", device_index)
            torch.cuda.set_device(self.device)
            props = torch.cuda.get_device_properties(self.device)
            self.name = props.name
            l2 = int(getattr(props, "L2_cache_size", 0) or 0)
        else:
            self.device = torch.device("cpu")
            self.name = "cpu (host clock; a test of the tool, not a baseline)"
        # The worker's flush: a memset of four times the L2, at least 64 MiB.
        self.flush_bytes = max(4 * l2, 64 << 20)
        self.flush_buffer = torch.empty(self.flush_bytes, dtype=torch.uint8, device=self.device)

    def synchronize(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def method(self, compile_mode):
        a = self.args
        return {
            "inputs": "one set per task, uniform on [0, 1) unless init is positive (uniform on "
                      "[0.5, 1.5)) or randint; the bench worker's timing distribution",
            "l2_flush_bytes": self.flush_bytes,
            "warmup_ms": a.warmup_ms,
            "min_trials": a.min_trials,
            "max_trials": a.max_trials,
            "max_ms": a.max_ms,
            "stable_rel": a.stable_rel,
            "timer": ("CUDA events around each call on the current stream, L2 flushed before "
                      "each; median, p10, p90" if self.cuda else
                      "the host clock around each call (--cpu: a test of the tool)"),
            "compile_mode": compile_mode,
            "float32": "TF32 off (matmul and cuDNN), float32 matmul precision highest",
        }

    def make_input(self, spec, generator):
        return ks_module.draw_input(self.torch, spec, generator, self.device, "timing")

    def time_function(self, fn, inputs):
        torch = self.torch
        a = self.args
        start = time.monotonic()
        calls = 0
        while calls < 2 or (time.monotonic() - start) * 1000 < a.warmup_ms:
            fn(*inputs)
            self.synchronize()
            calls += 1
            if calls > 10000:
                break
        def run_batch(n):
            if not self.cuda:
                times = []
                for _ in range(n):
                    self.flush_buffer.zero_()
                    begin = time.perf_counter()
                    fn(*inputs)
                    times.append((time.perf_counter() - begin) * 1000)
                return times
            stream = torch.cuda.current_stream()
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(n)]
            for begin, end in events:
                self.flush_buffer.zero_()
                begin.record(stream)
                fn(*inputs)
                end.record(stream)
            torch.cuda.synchronize()
            return [begin.elapsed_time(end) for begin, end in events]

        return measure(run_batch, a.min_trials, a.max_trials, a.max_ms, a.stable_rel)

    def max_abs_diff(self, a, b):
        """Returns the largest |a - b| over every output, in chunks (outputs reach gigabytes)."""
        torch = self.torch
        a = a if isinstance(a, (tuple, list)) else (a,)
        b = b if isinstance(b, (tuple, list)) else (b,)
        if len(a) != len(b):
            return float("nan")
        worst = 0.0
        for x, y in zip(a, b):
            if x.shape != y.shape:
                return float("nan")
            fx, fy = x.reshape(-1), y.reshape(-1)
            step = 1 << 26
            for i in range(0, fx.numel(), step):
                d = (fx[i:i + step].double() - fy[i:i + step].double()).abs().max().item()
                if d != d:  # NaN
                    return float("nan")
                worst = max(worst, d)
        return worst

    def torch_function(self, task, seed):
        """Returns (fn, its arguments, the task's inputs): the task's torch baseline as a
        function and what it is called with, and the tensors of the task's inputs in manifest
        order (what a kernel of the task takes), drawn from `seed`."""
        torch = self.torch
        generator = torch.Generator(device=self.device)
        generator.manual_seed(seed)
        inputs = [self.make_input(s, generator) for s in task["inputs"]]
        table = task.get("module")
        if table is not None:
            # The module itself, with its own parameters (their values do not change the
            # time), called on the task's inputs as its forward takes them.
            fn = ks_module.load_module(torch, table, self.device)
            tensors = {s["name"]: t for s, t in zip(task["inputs"], inputs)}
            return fn, ks_module.call_arguments(torch, table, tensors, self.device,
                                                generator), inputs
        scope = {"torch": torch, "F": torch.nn.functional, "math": math}
        exec(compile(function_source(task), f"{task['manifest']}:torch", "exec"), scope)
        return scope["torch_expression"], inputs, inputs

    def time_task(self, task, seed):
        """Returns the baseline entry of `task`: eager and compile timings or their errors."""
        torch = self.torch
        entry = {
            "manifest": task["manifest"],
            "torch": task["torch"],
            "inputs": signature(task["inputs"]),
            "outputs": signature(task["outputs"]),
            "date": now(),
        }
        table = task.get("module")
        if table is not None:
            entry["torch"] = f"the module {table['entry']} of {table.get('file', '?')}"
        elif task["torch"] is None:
            entry["error"] = NO_TORCH
            return entry
        inputs = eager_out = outs = compiled = compiled_out = None
        try:
            fn, inputs, _ = self.torch_function(task, seed)
            with torch.no_grad():
                try:
                    eager_out = fn(*inputs)
                    self.synchronize()
                except Exception as e:  # the expression itself is wrong: nothing to time
                    entry["error"] = describe_error(e)
                    return entry
                outs = eager_out if isinstance(eager_out, (tuple, list)) else (eager_out,)
                got = [list(o.shape) for o in outs]
                want = [s["shape"] for s in task["outputs"]]
                entry["output_shapes_match"] = got == want
                if got != want:
                    entry["output_shapes"] = got
                try:
                    entry["eager"] = self.time_function(fn, inputs)
                except Exception as e:
                    entry["eager"] = {"error": describe_error(e)}
                if self.args.skip_compile:
                    entry["compile"] = {"error": "not timed (--skip-compile)"}
                    return entry
                try:
                    t0 = time.monotonic()
                    compiled = torch.compile(fn, mode=None if self.args.compile_mode == "default"
                                             else self.args.compile_mode)
                    compiled_out = compiled(*inputs)
                    self.synchronize()
                    entry["compile_seconds"] = round(time.monotonic() - t0, 3)
                    diff = self.max_abs_diff(eager_out, compiled_out)
                    # JSON has no NaN: null says the outputs could not be compared (or held NaN).
                    entry["max_abs_diff_eager_compile"] = None if diff != diff else diff
                    compiled_out = None
                    entry["compile"] = self.time_function(compiled, inputs)
                except Exception as e:
                    entry["compile"] = {"error": describe_error(e)}
        except Exception as e:
            entry["error"] = describe_error(e)
        finally:
            # Release everything of the task before the next one: its tensors reach 15 GB.
            del inputs, eager_out, outs, compiled, compiled_out
            try:
                torch._dynamo.reset()
            except Exception:
                pass
            gc.collect()
            if self.cuda:
                torch.cuda.empty_cache()
        return entry


# -- command line -------------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Times each task's torch expression eagerly and under torch.compile with "
                    "the bench worker's method (L2 flushed, CUDA events, median) and writes a "
                    "baselines file for kernelskill ([report] torch_baselines, or --baselines).")
    p.add_argument("paths", nargs="+", metavar="MANIFEST_OR_SUITE",
                   help="task manifests (.toml) or suite folders (every *.toml in them)")
    p.add_argument("-o", "--output", default="torch-baselines.json",
                   help="the baselines file to write (default: %(default)s)")
    p.add_argument("--kernelskill", metavar="PATH",
                   help="the kernelskill binary that reads the manifests (a family's torch "
                        "expression is derived by the engine); default: $KS_KERNELSKILL, "
                        "kernelskill on PATH, dist/bin/kernelskill; 'none' or none found: the "
                        "TOML alone is read, and only a manifest's own torch field is known")
    p.add_argument("--dry-run", action="store_true",
                   help="list what would be timed (needs no torch, no GPU) and write nothing")
    p.add_argument("--merge", action="store_true",
                   help="keep the tasks of an existing OUTPUT that this run does not time "
                        "(it must come from the same device)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default: 0)")
    p.add_argument("--cpu", action="store_true",
                   help="run on the CPU with the host clock: a test of the tool where there is "
                        "no GPU; its numbers are no baseline")
    p.add_argument("--compile-mode", default="default",
                   choices=["default", "reduce-overhead", "max-autotune",
                            "max-autotune-no-cudagraphs"],
                   help="torch.compile mode (default: %(default)s, what torch.compile(f) gives)")
    p.add_argument("--skip-compile", action="store_true",
                   help="time eager only (compile is recorded as not timed)")
    p.add_argument("--warmup-ms", type=float, default=25.0,
                   help="warm-up per function, ms (default: %(default)s, the worker's)")
    p.add_argument("--min-trials", type=int, default=10,
                   help="timed calls, at least (default: %(default)s)")
    p.add_argument("--max-trials", type=int, default=2000,
                   help="timed calls, at most (default: %(default)s)")
    p.add_argument("--max-ms", type=float, default=2000.0,
                   help="GPU time timed per function before stopping, ms (default: %(default)s)")
    p.add_argument("--stable-rel", type=float, default=0.005,
                   help="stop once a batch moves the median by less than this fraction "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=20261126, help="seed of the inputs")
    args = p.parse_args(argv)
    if args.min_trials < 1 or args.max_trials < args.min_trials:
        p.error("--min-trials must be >= 1 and at most --max-trials")
    if args.max_ms <= 0 or args.stable_rel < 0 or args.warmup_ms < 0:
        p.error("--max-ms must be > 0, --stable-rel and --warmup-ms >= 0")
    return args


def dry_run(tasks, args, out):
    """Prints what a run would time, one block per task, and the file it would write."""
    out.write(f"would time {len(tasks)} task(s) on CUDA device {args.device}, eager and "
              f"torch.compile (mode {args.compile_mode}), into {args.output}\n")
    for t in tasks:
        gb = task_bytes(t) / 1e9
        if t.get("module") is not None:
            out.write(f"{t['name']}: the module {t['module']['entry']} of "
                      f"{t['module'].get('file', '?')}   ({t['manifest']}, {gb:.3g} GB of inputs "
                      f"and outputs)\n")
            for s in t["inputs"]:
                out.write(f"  {s['name']}: {s['dtype']}{s['shape']}, {timing_distribution(s)}\n")
            continue
        if t["torch"] is None:
            out.write(f"{t['name']}: {NO_TORCH}: recorded as an error ({t['manifest']})\n")
            continue
        try:
            function_source(t)
        except ManifestError as e:
            out.write(f"{t['name']}: {e}: recorded as an error\n")
            continue
        out.write(f"{t['name']}: {t['torch']}   ({t['manifest']}, {gb:.3g} GB of inputs and "
                  f"outputs)\n")
        for s in t["inputs"]:
            out.write(f"  {s['name']}: {s['dtype']}{s['shape']}, {timing_distribution(s)}\n")
    out.write(f"method: warm-up {args.warmup_ms} ms, then batches of calls each after an L2 "
              f"flush (4x the L2, at least 64 MiB) between CUDA events, until {args.min_trials}"
              f"+ trials and a median stable to {args.stable_rel}, or {args.max_ms} ms timed\n")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    kernelskill = find_kernelskill(args.kernelskill)
    if kernelskill is None and args.kernelskill != "none":
        print("torch_baselines: no kernelskill binary found (--kernelskill): reading the "
              "manifests alone, a family task without its own torch field gets no baseline",
              file=sys.stderr)
    try:
        tasks = read_tasks(args.paths, kernelskill)
    except ManifestError as e:
        print(f"torch_baselines: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        dry_run(tasks, args, sys.stdout)
        return 0
    try:
        import torch
    except ImportError as e:
        print(f"torch_baselines: cannot import torch ({e}); run it on the GPU host, or use "
              f"--dry-run", file=sys.stderr)
        return 3
    if not args.cpu and (not torch.cuda.is_available() or
                         args.device >= torch.cuda.device_count()):
        print(f"torch_baselines: no CUDA device {args.device} (--cpu tests the tool without "
              f"one)", file=sys.stderr)
        return 3
    timer = TorchTimer(torch, None if args.cpu else args.device, args)
    doc = new_document(timer.name, torch.__version__, torch.version.cuda,
                       timer.method(args.compile_mode))
    try:
        if args.merge:
            doc = merge_into(args.output, doc)
    except ManifestError as e:
        print(f"torch_baselines: {e}", file=sys.stderr)
        return 2
    print(f"timing {len(tasks)} task(s) on {timer.name} (torch {torch.__version__}), "
          f"compile mode {args.compile_mode}", file=sys.stderr)
    for t in tasks:
        t0 = time.monotonic()
        entry = timer.time_task(t, args.seed)
        doc["tasks"][t["name"]] = entry
        write_document(args.output, doc)
        print(f"{t['name']}: {summary_line(entry)} ({time.monotonic() - t0:.1f} s)",
              file=sys.stderr)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def summary_line(entry):
    if "error" in entry:
        return "error: " + entry["error"]
    parts = []
    for mode in ("eager", "compile"):
        m = entry.get(mode, {})
        if "median_ms" in m:
            parts.append(f"{mode} {m['median_ms']:.4g} ms (p10 {m['p10_ms']:.4g}, p90 "
                         f"{m['p90_ms']:.4g}, {m['trials']} trials)")
        else:
            parts.append(f"{mode} error: {m.get('error', '?')}")
    if "max_abs_diff_eager_compile" in entry:
        parts.append(f"max |eager - compile| {entry['max_abs_diff_eager_compile']:.3g}")
    return "; ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
