#!/usr/bin/env python3
"""Writes the Python package of `kernelskill export` from its spec (cli/export_spec.hpp: the
campaign's winners, each checked by the engine to be the source the campaign verified, with
its task as `kernelskill task show --json` gives it and its line of results.json).

The package (docs/export.md):

    PKG/setup.py, pyproject.toml      the ahead-of-time build (tools/export/setup.py)
    PKG/README.md                     what each op replaces, its speedup, the GPU, provenance
    PKG/<package>/__init__.py         one function per op, one drop-in class per imported task
    PKG/<package>/export.json         the record: campaign, GPU, driver, hashes, flags, specs
    PKG/<package>/kernels/<op>.cu     the winners, byte for byte
    PKG/<package>/csrc/ops.cpp        the binding: one thin function per op (generated)
    PKG/<package>/csrc/ks_binding.h   what the ops share (tools/export/ks_binding.h)
    PKG/<package>/csrc/include/kernelskill/abi.h
    PKG/<package>/_runtime.py, _build.py, _modules.py, _ks_module.py   (copied as they are)
    PKG/<package>/originals/<op>.py   an imported task's module source, for its drop-in class

Needs Python 3.11 or later (tomllib reads an imported task's [module] table), no torch.
Exit codes: 0 written, 2 a spec it cannot use, 3 a file it cannot write.
"""

import argparse
import datetime
import hashlib
import json
import keyword
import os
import shutil
import sys
import textwrap

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATES = os.path.join(HERE, "export")
NAMESPACE = "kernelskill"
ABI_DTYPES = {"f32": "KS_F32", "f16": "KS_F16", "bf16": "KS_BF16", "f64": "KS_F64",
              "i32": "KS_I32", "i64": "KS_I64", "u8": "KS_U8"}
# Names the package's own module already holds beside the ops.
RESERVED = {"build", "status", "verify", "ops", "modules", "record", "torch",
            "VerificationError"}


class SpecError(Exception):
    """The spec cannot be turned into a package; the message says why."""


def identifier(text, taken):
    """Returns `text` as a Python identifier not in `taken` (and adds it there)."""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text) or "t"
    if name[0].isdigit():
        name = "t_" + name
    while keyword.iskeyword(name) or name in taken:
        name += "_"
    taken.add(name)
    return name


def shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def tensor_text(spec):
    return f"{spec['name']}: {spec['dtype']}{shape_text(spec['shape'])}"


def ratio(value):
    return f"{value:.2f}x" if isinstance(value, (int, float)) and value > 0 else "-"


def ms(value):
    return f"{value:.4g} ms" if isinstance(value, (int, float)) and value > 0 else "-"


# -- the record ---------------------------------------------------------------------------------


def module_table(task):
    """Returns the manifest's [module] table (tools/ks_module.py's reading), or None."""
    if not task.get("module"):
        return None
    if tomllib is None:
        raise SpecError(f"task {task['name']} was imported from a module: reading its manifest "
                        f"needs Python 3.11 or later (tomllib); name one with --python")
    with open(task["manifest"], "rb") as f:
        return tomllib.load(f).get("module")


def input_sources(table, inputs):
    """Returns, per op input, where the drop-in module finds it: {"argument": i} (forward's
    i-th argument) or {"parameter": PATH} (a parameter or buffer); or a sentence saying why
    there is no drop-in module."""
    arguments = table.get("arguments", [])
    parameters = table.get("parameters", {})
    sources = []
    for spec in inputs:
        at = [i for i, a in enumerate(arguments) if a.get("input") == spec["name"]]
        held = [p for p, name in parameters.items() if name == spec["name"]]
        if at:
            sources.append({"argument": at[0]})
        elif held:
            sources.append({"parameter": held[0]})
        else:
            return (f"input {spec['name']} is neither an argument nor a parameter of "
                    f"{table.get('entry')}")
    return sources


def op_record(task, package_dir):
    """Returns the record of one op (export.json's "ops" entry) and copies its kernel."""
    op = task["op"]
    with open(task["kernel"], "rb") as f:
        source = f.read()
    os.makedirs(os.path.join(package_dir, "kernels"), exist_ok=True)
    with open(os.path.join(package_dir, "kernels", f"{op}.cu"), "wb") as f:
        f.write(source)
    taken = {"fallback"}
    inputs = []
    for s in task["inputs"]:
        entry = {"name": s["name"], "arg": identifier(s["name"], taken), "dtype": s["dtype"],
                 "shape": s["shape"], "init": s.get("init", "normal")}
        for key in ("low", "high"):
            if key in s:
                entry[key] = s[key]
        inputs.append(entry)
    outputs = [{"name": s["name"], "dtype": s["dtype"], "shape": s["shape"]}
               for s in task["outputs"]]
    for s in inputs + outputs:
        if s["dtype"] not in ABI_DTYPES:
            raise SpecError(f"task {task['name']}: {s['name']} has dtype {s['dtype']}, which the "
                            f"ABI does not know")
    results = "Tensor" if len(outputs) == 1 else "(" + ", ".join(["Tensor"] * len(outputs)) + ")"
    result = task["result"]
    winner = result["winner"]
    record = {
        "task": task["name"],
        # The package's function: the op's name, unless the package's own names hold it.
        "function": op if op not in RESERVED and not op.startswith("_") else f"{op}_op",
        "family": task["family"],
        "about": task.get("about", ""),
        "manifest": task["manifest"],
        "kernel": f"kernels/{op}.cu",
        "sha256": hashlib.sha256(source).hexdigest(),
        "source_hash": task["source_hash"],
        "nvcc_flags": task["nvcc_flags"],
        "schema": "(" + ", ".join(f"Tensor {i['arg']}" for i in inputs) + ") -> " + results,
        "inputs": inputs,
        "outputs": outputs,
        "torch": task.get("torch"),
        "tolerance": task["tolerance"],
        "measured": {
            "gpu": task.get("gpu"),
            "node": winner.get("node"),
            "declared": winner.get("declared"),
            "median_ms": winner.get("median_ms"),
            "reference_ms": (result.get("reference") or {}).get("median_ms"),
            "speedup": winner.get("speedup"),
            "fraction_of_roofline": winner.get("fraction_of_roofline"),
            "torch_eager_ms": result.get("torch_eager_ms"),
            "torch_compile_ms": result.get("torch_compile_ms"),
            "speedup_vs_eager": result.get("speedup_vs_eager"),
            "speedup_vs_compile": result.get("speedup_vs_compile"),
            "lineage": [step.get("key") for step in winner.get("lineage", [])],
            "vendor_libraries": winner.get("vendor_libraries", []),
        },
        "module": None,
        "sources": None,
        "module_note": None,
    }
    table = module_table(task)
    if table is not None:
        sources = input_sources(table, inputs)
        if isinstance(sources, str):
            record["module_note"] = f"no drop-in module: {sources}"
        else:
            record["module"] = {k: v for k, v in table.items() if k != "source"}
            record["sources"] = sources
            originals = os.path.join(package_dir, "originals")
            os.makedirs(originals, exist_ok=True)
            with open(os.path.join(originals, f"{op}.py"), "w", encoding="utf-8") as f:
                f.write(table["source"])
    return record


def class_names(ops):
    """Returns {op: class name} of the drop-in modules: the original class's name, or with
    the op's name added where two tasks share it."""
    entries = [r["module"]["entry"] for r in ops.values() if r["module"]]
    names = {}
    taken = set(ops) | RESERVED
    for op, r in ops.items():
        if not r["module"]:
            continue
        entry = r["module"]["entry"]
        name = entry if entries.count(entry) == 1 else f"{entry}_{op}"
        names[op] = identifier(name, taken)
    return names


# -- the files ------------------------------------------------------------------------------------


def ops_cpp(record):
    """Returns csrc/ops.cpp: one thin binding per op, registered for CUDA and Autograd."""
    lines = [
        "// The CUDA implementations of this package's ops, written by `kernelskill export`: per",
        "// op, the tensors its kernel was tuned and verified for and a thin function that hands",
        "// them to ks_export::call() (ks_binding.h: the checks, the outputs, the kernel's",
        "// ks_forward on PyTorch's current stream). The ops' schemas and fake implementations are",
        "// defined in Python (_runtime.py); backward raises (autogradNotImplementedFallback).",
        '#include "ks_binding.h"',
        "",
        "namespace {",
    ]
    impl = []
    for op, r in record["ops"].items():
        m = r["measured"]
        gpu = (m.get("gpu") or {}).get("name", "its GPU")
        lines += ["", f"// -- {op}: task {r['task']}, {r['kernel']} (node {m.get('node')}), "
                      f"{ratio(m.get('speedup'))} its reference on {gpu}"]
        for kind in ("inputs", "outputs"):
            lines.append(f"const ks_export::tensor_spec {op}_{kind}[] = {{")
            for s in r[kind]:
                dims = ", ".join(str(d) for d in s["shape"])
                lines.append(f'    {{"{s["name"]}", {ABI_DTYPES[s["dtype"]]}, {len(s["shape"])}, '
                             f"{{{dims}}}}},")
            lines.append("};")
        n_in, n_out = len(r["inputs"]), len(r["outputs"])
        lines.append(f'const ks_export::op_spec {op}_spec = {{"{op}", {op}_inputs, {n_in}, '
                     f"{op}_outputs, {n_out}}};")
        params = ", ".join(f"const at::Tensor& {i['arg']}" for i in r["inputs"])
        args = ", ".join(i["arg"] for i in r["inputs"])
        if n_out == 1:
            lines += [f"at::Tensor op_{op}({params}) {{",
                      f"  return ks_export::call({op}_spec, {{{args}}})[0];", "}"]
        else:
            tensors = ", ".join(["at::Tensor"] * n_out)
            outs = ", ".join(f"out[{k}]" for k in range(n_out))
            lines += [f"std::tuple<{tensors}> op_{op}({params}) {{",
                      f"  std::vector<at::Tensor> out = ks_export::call({op}_spec, {{{args}}});",
                      f"  return {{{outs}}};", "}"]
        impl.append(op)
    lines += ["", "} // namespace", "", f"TORCH_LIBRARY_IMPL({NAMESPACE}, CUDA, m) {{"]
    lines += [f'  m.impl("{op}", &op_{op});' for op in impl]
    lines += ["}", "", f"TORCH_LIBRARY_IMPL({NAMESPACE}, Autograd, m) {{"]
    lines += [f'  m.impl("{op}", torch::autograd::autogradNotImplementedFallback());'
              for op in impl]
    lines += ["}", ""]
    return "\n".join(lines)


def op_docstring(op, r):
    m = r["measured"]
    gpu = (m.get("gpu") or {}).get("name", "the campaign's GPU")
    replaces = f"`{r['torch']}`" if r.get("torch") else "its task's reference"
    about = r["about"].rstrip(".") if r["about"] else f"Task {r['task']}"
    lines = [f"{about}.", "",
             f"Runs {NAMESPACE}::{op}, tuned and verified for "
             f"{', '.join(tensor_text(s) for s in r['inputs'])}; returns "
             f"{', '.join(tensor_text(s) for s in r['outputs'])}.",
             f"Replaces {replaces}: {ms(m.get('median_ms'))} on {gpu}, "
             + ", ".join(f"{ratio(m.get(key))} {what}" for key, what in (
                 ("speedup", "its reference"), ("speedup_vs_eager", "torch eager"),
                 ("speedup_vs_compile", "torch.compile")) if ratio(m.get(key)) != "-") + ".",
             "fallback=True runs that torch expression for other shapes, dtypes or devices."]
    wrapped = [textwrap.fill(line, 92, initial_indent="    ", subsequent_indent="    ")
               if line else "" for line in lines]
    return "\n".join(wrapped).lstrip()


def init_py(record, names):
    c = record["campaign"]
    gpus = ", ".join(g.get("name", "?") for g in c.get("gpus", [])) or "?"
    lines = [
        f'"""{record["package"]}: {len(record["ops"])} kernel(s) found by a kernelskill campaign, '
        f"as PyTorch ops.",
        "",
        f"Exported by {record['exported_by']} on {record['exported_at']} from the campaign in",
        f"{c.get('output')} (started {c.get('started_at')}, measured on {gpus}). Each op is the",
        f"custom op {NAMESPACE}::<op> (torch.library): call it here or as torch.ops.{NAMESPACE}.<op>;",
        "README.md says what each replaces, its speedup and the GPU that measured it.",
        '"""',
        "",
        "from . import _runtime",
        "",
        "_package = _runtime.Package(__name__, __path__[0])",
        "record = _package.record",
        "status = _package.status",
        "build = _package.build",
        "verify = _package.verify",
        "VerificationError = _runtime.VerificationError",
    ]
    for op, r in record["ops"].items():
        params = ", ".join(i["arg"] for i in r["inputs"])
        fn = r["function"]
        lines += ["", "",
                  f"def {fn}({params}, *, fallback=False):",
                  f'    """{op_docstring(op, r)}"""',
                  f'    return _package.call("{op}", ({params},), fallback)',
                  "",
                  f"{fn}.op = _package.overloads[\"{op}\"]",
                  f"{fn}.record = _package.ops[\"{op}\"]",
                  f"{fn}.torch = _package.expression_or_error(\"{op}\")"]
    if names:
        lines.append("")
    for op, name in names.items():
        lines.append(f'{name} = _package.module_class("{op}", "{name}")')
    functions = {op: r["function"] for op, r in record["ops"].items()}
    lines += ["", f"ops = {{{', '.join(f'{op!r}: {fn}' for op, fn in functions.items())}}}",
              f"modules = {{{', '.join(f'{op!r}: {name}' for op, name in names.items())}}}",
              f"__all__ = {sorted(list(functions.values()) + list(names.values()) + ['build', 'status', 'verify'])!r}",
              ""]
    return "\n".join(lines)


def setup_py(record):
    with open(os.path.join(TEMPLATES, "setup.py"), encoding="utf-8") as f:
        text = f.read()
    return text.replace("@PACKAGE@", record["package"])


def pyproject_toml():
    return ("# The build needs torch's extension tooling: build without isolation, against the torch\n"
            "# you run with (pip install --no-build-isolation .), else pip installs another torch.\n"
            "[build-system]\n"
            'requires = ["setuptools>=64", "torch"]\n'
            'build-backend = "setuptools.build_meta"\n')


def readme(record, names):
    c = record["campaign"]
    pkg = record["package"]
    gpus = c.get("gpus", [])
    rows = []
    for op, r in record["ops"].items():
        m = r["measured"]
        replaces = f"`{r['torch']}`" if r.get("torch") else "-"
        if r["module"]:
            replaces += f"; the module `{r['module']['entry']}` (`{pkg}.{names[op]}`)"
        rows.append(f"| `{pkg}.{r['function']}` | {replaces} | {', '.join(tensor_text(s) for s in r['inputs'])} "
                    f"| {ms(m.get('median_ms'))} | {ratio(m.get('speedup'))} | "
                    f"{ratio(m.get('speedup_vs_eager'))} | {ratio(m.get('speedup_vs_compile'))} | "
                    f"{(m.get('gpu') or {}).get('name', '-')} |")
    gpu_lines = [f"- GPU {g.get('index', '?')}: {g.get('name', '?')} (compute capability "
                 f"{g.get('cc', '?')}, {g.get('sms', '?')} SMs, driver's CUDA version "
                 f"{version_text(g.get('driver_version'))}, runtime {version_text(g.get('runtime_version'))})"
                 for g in gpus]
    example = next(iter(record["ops"].values()))
    first = example["function"]
    call_args = ", ".join(i["arg"] for i in example["inputs"])
    makes = "\n".join(
        f"{i['arg']} = torch.rand({', '.join(str(d) for d in i['shape'])}, device=\"cuda\")"
        if i["dtype"] == "f32" else f"{i['arg']} = ...  # {i['dtype']}{shape_text(i['shape'])}"
        for i in example["inputs"])
    text = [
        f"# {pkg}: kernels found by kernelskill, as PyTorch ops",
        "",
        f"Exported by `{record['exported_by']}` on {record['exported_at']} from the campaign in "
        f"`{c.get('output')}` (started {c.get('started_at')}, {c.get('runs')} run(s); kernels "
        f"built for `{c.get('arch')}` by {c.get('nvcc') or 'nvcc'}). Each kernel below is the "
        f"campaign's winner for its task, its source unchanged (`{pkg}/kernels/`), registered as "
        f"the custom op `{NAMESPACE}::<op>`.",
        "",
        "| op | replaces | tuned and verified for | kernel time | vs its reference | vs torch "
        "eager | vs torch.compile | measured on |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "Times are the campaign's medians (CUDA events, L2 flushed before every call, inputs "
        "uniform on [0, 1)); \"vs its reference\" is against the task's reference kernel, \"vs "
        "torch\" against the torch expression timed the same way on the same GPU, where the "
        "campaign had torch baselines (`-` where it had none).",
        "",
        "The campaign's GPUs:",
        "",
        *(gpu_lines or ["- not recorded"]),
        "",
        "## Build",
        "",
        "In this folder:",
        "",
        "```sh",
        "pip install --no-build-isolation .      # ahead of time, into the environment (its torch)",
        "python setup.py build_ext --inplace     # or in place: then import it from this folder",
        "```",
        "",
        "Either needs torch, nvcc (CUDA 12 or later; `KERNELSKILL_NVCC`, `CUDA_HOME`, "
        "`/usr/local/cuda`) and a C++ compiler, no GPU. Without a build, `import "
        f"{pkg}` builds the package just in time where a CUDA device is (once, cached in "
        "`~/.cache/kernelskill/export` or `$KERNELSKILL_EXPORT_CACHE`; `KERNELSKILL_JIT=0` "
        f"turns that off; `{pkg}.build()` builds on demand). Each kernel is built by nvcc with "
        "the flags the campaign built it with, into a shared object of its own, and checked "
        "first to be the source the campaign verified (its SHA-256 below). "
        f"`{pkg}.status()` says whether each op is ready.",
        "",
        "## Use",
        "",
        "```python",
        "import torch",
        f"import {pkg}",
        makes,
        f"y = {pkg}.{first}({call_args})                       # or torch.ops.{NAMESPACE}.<op>(...)",
        f"y = {pkg}.{first}({call_args}, fallback=True)        # other shapes: its torch expression",
        f"torch.export.export(model, args)            # the ops trace (fake implementations)",
        f"{pkg}.verify()                              # every op against its torch expression",
        "```",
        "",
        "Each op checks its inputs at every call: the dtypes and shapes in the table, on one "
        "CUDA device (a bool tensor stands for u8); anything else is an error that names what "
        "it got and what the kernel was tuned for, unless `fallback=True` (then the torch "
        "expression runs, with a warning once per signature). Non-contiguous inputs are "
        "copied to contiguous ones. The kernel runs on PyTorch's current stream. The ops have "
        "no backward: asking a gradient through one raises.",
    ]
    if names:
        text += [
            "",
            "## Drop-in modules",
            "",
            "For a task imported from an `nn.Module`, the package has a subclass of the original "
            "class (its source is in `originals/`) whose forward runs the exported op: the same "
            "constructor, parameters and `state_dict` keys.",
            "",
        ]
        for op, name in names.items():
            t = record["ops"][op]["module"]
            text.append(f"- `{pkg}.{name}{format_init(t.get('init', '[]'))}` replaces "
                        f"`{t['entry']}` of `{os.path.basename(t.get('file', '?'))}`")
        text += [
            "",
            "```python",
            f"model.block = {pkg}.{next(iter(names.values()))}(...)   # the arguments it was imported with",
            "model.block.load_state_dict(old_block.state_dict())",
            "model.block.verify()       # exported against original forward on random inputs",
            "model.block.ks_fallback = True   # other calls run the original forward instead of failing",
            "```",
            "",
            "Its kernel computes the module as it was imported: constructed with the arguments "
            "above (their values are constants of the kernel), called with the same literal "
            "arguments, and, for a module with batch norm or dropout inside, in the same mode. "
            "Any other call raises, saying what differs, unless `ks_fallback` is set.",
        ]
    notes = [f"- `{op}`: {r['module_note']}" for op, r in record["ops"].items() if r["module_note"]]
    if notes:
        text += ["", *notes]
    text += ["", "## Provenance", ""]
    for op, r in record["ops"].items():
        m = r["measured"]
        text += [f"### {op}", "",
                 f"- task `{r['task']}` ({r['family']}), manifest `{r['manifest']}`",
                 f"- kernel `{r['kernel']}`: SHA-256 `{r['sha256']}`, the campaign's content "
                 f"hash `{r['source_hash']}`, node {m.get('node')}"
                 + ("" if m.get("declared") else " (best so far: the campaign had not re-timed "
                    "its finalists)"),
                 f"- lineage: {' -> '.join(f'`{k}`' for k in m.get('lineage') or []) or '-'}",
                 f"- nvcc flags: `{' '.join(r['nvcc_flags'])}`",
                 f"- tolerance: atol {r['tolerance']['atol']:g}, rtol {r['tolerance']['rtol']:g}, "
                 f"norm_rel {r['tolerance']['norm_rel']:g}"]
        if m.get("vendor_libraries"):
            text.append(f"- uses {', '.join(m['vendor_libraries'])}: its time is not its own "
                        f"kernels' alone")
        text.append("")
    return "\n".join(text)


def version_text(value):
    if not isinstance(value, int) or value <= 0:
        return "?"
    return f"{value // 1000}.{value % 1000 // 10}"


def format_init(init):
    try:
        import ast
        values = ast.literal_eval(init)
        return "(" + ", ".join(repr(v) for v in values) + ")"
    except (ValueError, SyntaxError, TypeError):
        return f"(*{init})"


def write_package(spec, out):
    """Writes the package of `spec` into the folder `out`."""
    if spec.get("format") != "kernelskill-export-spec" or spec.get("version") != 1:
        raise SpecError("not a kernelskill-export-spec of version 1")
    package = spec["package"]
    if not package.isidentifier() or keyword.iskeyword(package):
        raise SpecError(f"package name {package!r} is not a Python identifier")
    package_dir = os.path.join(out, package)
    os.makedirs(os.path.join(package_dir, "csrc", "include", "kernelskill"), exist_ok=True)
    env = (spec.get("campaign") or {}).get("environment") or {}
    record = {
        "format": "kernelskill-export",
        "version": 1,
        "package": package,
        "namespace": NAMESPACE,
        "exported_by": spec.get("exported_by", "kernelskill"),
        "exported_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "campaign": {
            "output": spec.get("output"),
            "started_at": (spec.get("campaign") or {}).get("started_at"),
            "runs": (spec.get("campaign") or {}).get("runs"),
            "host": env.get("host"),
            "arch": env.get("arch"),
            "nvcc": env.get("nvcc"),
            "gpus": [{k: g.get(k) for k in ("index", "name", "uuid", "cc", "sms", "memory_bytes",
                                            "driver_version", "runtime_version")}
                     for g in env.get("gpus", [])],
        },
        "torch_baselines": spec.get("torch_baselines"),
        "ops": {},
    }
    for task in spec["tasks"]:
        record["ops"][task["op"]] = op_record(task, package_dir)
    names = class_names(record["ops"])
    for op, name in names.items():
        record["ops"][op]["module"]["class"] = name
    if names:
        with open(os.path.join(package_dir, "originals", "__init__.py"), "w") as f:
            f.write('"""The source files of the modules the tasks were imported from."""\n')

    files = {
        os.path.join(package_dir, "export.json"): json.dumps(record, indent=2) + "\n",
        os.path.join(package_dir, "__init__.py"): init_py(record, names),
        os.path.join(package_dir, "csrc", "ops.cpp"): ops_cpp(record),
        os.path.join(out, "setup.py"): setup_py(record),
        os.path.join(out, "pyproject.toml"): pyproject_toml(),
        os.path.join(out, "README.md"): readme(record, names),
    }
    for path, text in files.items():
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    for name in ("_runtime.py", "_build.py", "_modules.py"):
        shutil.copyfile(os.path.join(TEMPLATES, name), os.path.join(package_dir, name))
    shutil.copyfile(os.path.join(HERE, "ks_module.py"), os.path.join(package_dir, "_ks_module.py"))
    shutil.copyfile(os.path.join(TEMPLATES, "ks_binding.h"),
                    os.path.join(package_dir, "csrc", "ks_binding.h"))
    shutil.copyfile(spec["abi_header"],
                    os.path.join(package_dir, "csrc", "include", "kernelskill", "abi.h"))
    return record


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spec", required=True, help="the spec (JSON), '-' for stdin")
    p.add_argument("--out", required=True, help="the package folder")
    args = p.parse_args(argv)
    try:
        if args.spec == "-":
            spec = json.load(sys.stdin)
        else:
            with open(args.spec, encoding="utf-8") as f:
                spec = json.load(f)
        write_package(spec, args.out)
    except (SpecError, KeyError, TypeError, ValueError) as e:
        print(f"ks_export: the spec cannot be used: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ks_export: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
