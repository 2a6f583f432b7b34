"""How this package's kernels and binding are built, ahead of time (setup.py) or just in time
(the first import where a GPU is, or build()).

Each kernels/<op>.cu is compiled by nvcc into kernels/<op>.so with the very flags the campaign
compiled it with (export.json's nvcc_flags: a shared object with its own shared CUDA runtime,
the campaign's architecture, the source's own ks-flags), so the package loads the binary that
was measured; the only addition is an rpath to the toolkit's libraries, so that the CUDA
runtime is found at load time. Before compiling, each source's SHA-256 is checked against the
one recorded at export: the package builds the kernels the campaign verified, or says which
file was changed (KERNELSKILL_ALLOW_EDITED=1 builds an edited one anyway).

csrc/ops.cpp, the binding, is compiled by torch.utils.cpp_extension (CppExtension in
setup.py, load() just in time) against torch's headers alone: no CUDA toolkit, no
libtorch_cuda, so it builds against a CPU wheel of torch too.

This file imports no torch at module level: setup.py reads it before torch's tooling runs.
Environment: KERNELSKILL_NVCC (the nvcc to use; else $CUDA_HOME/bin/nvcc,
/usr/local/cuda/bin/nvcc, nvcc on PATH), KERNELSKILL_ARCH (build for another architecture
than the campaign's, e.g. sm_100a: the kernel was tuned and verified on the campaign's),
KERNELSKILL_EXPORT_CACHE (the just-in-time build's folder; default
~/.cache/kernelskill/export).
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = "export.json"


class BuildError(Exception):
    """The package cannot be built here; the message says why and what to do."""


def read_record(folder=HERE):
    """Returns export.json of the package in `folder`."""
    with open(os.path.join(folder, RECORD), encoding="utf-8") as f:
        return json.load(f)


def find_nvcc():
    """Returns the nvcc to build the kernels with, or raises BuildError."""
    given = os.environ.get("KERNELSKILL_NVCC")
    candidates = [given] if given else []
    if os.environ.get("CUDA_HOME"):
        candidates.append(os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc"))
    candidates += ["/usr/local/cuda/bin/nvcc", shutil.which("nvcc")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise BuildError("no nvcc found to build the kernels (set KERNELSKILL_NVCC or CUDA_HOME, or "
                     "put the CUDA toolkit's bin/ on PATH)")


def nvcc_release(nvcc):
    """Returns nvcc's "release 13.0, V13.0.88" line, or ''."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except OSError:
        return ""
    return next((line.strip() for line in out.splitlines() if "release" in line), "")


def runtime_dir(nvcc):
    """Returns the toolkit's library folder beside `nvcc` (where libcudart.so lives)."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    for sub in ("lib64", os.path.join("targets", "x86_64-linux", "lib"), "lib"):
        if os.path.isdir(os.path.join(root, sub)):
            return os.path.join(root, sub)
    return os.path.join(root, "lib64")


def kernel_flags(spec):
    """Returns the op's nvcc flags: the campaign's, its architecture replaced where
    KERNELSKILL_ARCH asks for another."""
    flags = list(spec["nvcc_flags"])
    arch = os.environ.get("KERNELSKILL_ARCH")
    if arch:
        sm = arch[3:] if arch.startswith("sm_") else arch
        flags = [f"-gencode=arch=compute_{sm},code=sm_{sm}" if f.startswith("-gencode=") else f
                 for f in flags]
    return flags


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_sources(folder, record):
    """Raises BuildError when a kernel's source is not the one the export recorded."""
    if os.environ.get("KERNELSKILL_ALLOW_EDITED") == "1":
        return
    for op, spec in record["ops"].items():
        path = os.path.join(folder, spec["kernel"])
        if not os.path.isfile(path):
            raise BuildError(f"{path} is missing: the package is incomplete; export it again")
        if sha256_of(path) != spec["sha256"]:
            raise BuildError(f"{path} is not the kernel the campaign verified (its SHA-256 "
                             f"differs from export.json's): export it again, or set "
                             f"KERNELSKILL_ALLOW_EDITED=1 to build the edited source anyway")


def kernel_command(nvcc, folder, spec, output):
    """Returns the nvcc command that builds one kernel into `output`."""
    return [nvcc, *kernel_flags(spec), "-I", os.path.join(folder, "csrc", "include"),
            "-Xlinker", "-rpath=" + runtime_dir(nvcc), "-o", output,
            os.path.join(folder, spec["kernel"])]


def build_kernels(folder, target, record=None, jobs=None, log=None, only_missing=False):
    """Builds every kernel of the package in `folder` into `target`/<op>.so, several nvcc at
    once; returns {op: path}. Raises BuildError with nvcc's output when one fails."""
    record = record or read_record(folder)
    check_sources(folder, record)
    nvcc = find_nvcc()
    os.makedirs(target, exist_ok=True)
    release = nvcc_release(nvcc)
    measured = record["campaign"].get("nvcc", "")
    if log and release and measured and release not in measured:
        log(f"note: building with nvcc {release}; the campaign's kernels were built with "
            f"{measured}")

    def one(item):
        op, spec = item
        output = os.path.join(target, f"{op}.so")
        if only_missing and os.path.isfile(output):
            return op, output, None
        fd, tmp = tempfile.mkstemp(prefix=f".{op}-", suffix=".so", dir=target)
        os.close(fd)
        done = subprocess.run(kernel_command(nvcc, folder, spec, tmp), capture_output=True,
                              text=True)
        if done.returncode != 0:
            os.unlink(tmp)
            return op, output, (done.stdout + done.stderr).strip()
        os.replace(tmp, output)
        return op, output, None

    built = {}
    failures = []
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        for op, output, problem in pool.map(one, record["ops"].items()):
            if problem is None:
                built[op] = output
                if log:
                    log(f"built {output}")
            else:
                failures.append(f"{op}: nvcc failed:\n{problem}")
    if failures:
        raise BuildError("\n".join(failures))
    return built


def binding_sources(folder):
    """Returns (sources, include folders) of the binding, csrc/ops.cpp."""
    csrc = os.path.join(folder, "csrc")
    return [os.path.join(csrc, "ops.cpp")], [csrc, os.path.join(csrc, "include")]


def cache_key(folder, record, torch_version, nvcc):
    """Returns what names a just-in-time build: the package's record and binding, torch's
    version, the nvcc and the architecture asked for."""
    h = hashlib.sha256()
    for part in (json.dumps(record, sort_keys=True), torch_version, nvcc, nvcc_release(nvcc),
                 os.environ.get("KERNELSKILL_ARCH", "")):
        h.update(part.encode())
        h.update(b"\0")
    for name in ("ops.cpp", "ks_binding.h", os.path.join("include", "kernelskill", "abi.h")):
        with open(os.path.join(folder, "csrc", name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def jit_build(folder, record, verbose=False, log=None):
    """Builds the kernels and the binding into the cache (once per content) and loads the
    binding into torch; returns (binding path, {op: kernel path}, cache folder)."""
    import torch
    import torch.utils.cpp_extension as extension
    nvcc = find_nvcc()
    key = cache_key(folder, record, torch.__version__, nvcc)
    root = os.environ.get("KERNELSKILL_EXPORT_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "kernelskill", "export")
    cache = os.path.join(root, f"{record['package']}-{key}")
    kernels = build_kernels(folder, os.path.join(cache, "kernels"), record, log=log,
                            only_missing=True)
    sources, includes = binding_sources(folder)
    binding_dir = os.path.join(cache, "binding")
    os.makedirs(binding_dir, exist_ok=True)
    try:
        path = extension.load(name=f"{record['package']}_binding_{key}", sources=sources,
                              extra_include_paths=includes, extra_cflags=["-O2"],
                              build_directory=binding_dir, is_python_module=False,
                              verbose=verbose)
    except Exception as e:  # the extension tooling raises several kinds
        raise BuildError(f"the binding (csrc/ops.cpp) does not build: {e}") from e
    return path, kernels, cache
