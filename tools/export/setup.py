"""Builds the package @PACKAGE@ ahead of time (written by `kernelskill export`):

    pip install --no-build-isolation .          # into the environment, against its torch
    python setup.py build_ext --inplace         # or in this folder

The binding (@PACKAGE@/csrc/ops.cpp) is a CppExtension of torch's tooling, @PACKAGE@._C,
loaded with torch.ops.load_library (it registers the ops' CUDA implementations; no Python
module of its own). The kernels are built by nvcc into @PACKAGE@/kernels/<op>.so with the
campaign's flags (@PACKAGE@/_build.py), after the binding, each checked first to be the source
the campaign verified. Needs torch, nvcc and a C++ compiler; no GPU.
"""

import os
import sys

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "@PACKAGE@"
sys.path.insert(0, os.path.join(HERE, PACKAGE))
import _build  # noqa: E402  (the package's own build rules; imports no torch)

record = _build.read_record(os.path.join(HERE, PACKAGE))
sources, includes = _build.binding_sources(os.path.join(HERE, PACKAGE))


class BuildKernels(BuildExtension):
    """The binding by torch's tooling, then every kernel by nvcc beside it."""

    def run(self):
        super().run()
        root = HERE if self.inplace else self.build_lib
        _build.build_kernels(os.path.join(HERE, PACKAGE), os.path.join(root, PACKAGE, "kernels"),
                             record, log=print)


setup(
    name=PACKAGE,
    version="1.0.0",
    description=f"{len(record['ops'])} kernel(s) found by a kernelskill campaign, as PyTorch ops",
    packages=[PACKAGE] + ([f"{PACKAGE}.originals"] if os.path.isdir(
        os.path.join(HERE, PACKAGE, "originals")) else []),
    package_data={PACKAGE: ["export.json", "kernels/*.cu", "csrc/*.cpp", "csrc/*.h",
                            "csrc/include/kernelskill/*.h"]},
    ext_modules=[CppExtension(f"{PACKAGE}._C", [os.path.relpath(s, HERE) for s in sources],
                              include_dirs=includes, extra_compile_args=["-O2"])],
    cmdclass={"build_ext": BuildKernels},
    install_requires=["torch"],
    zip_safe=False,
)
