#!/usr/bin/env python3
"""A package of `kernelskill export` built and used with torch, on a machine without a GPU:

- a scripted campaign (the scripted worker, tests/actors/fake_nvcc.sh) over quickstart's relu
  and a module of a user's own code imported here (tests/tools/import_user/my_blocks.py's
  ScaledResidual, a drop-in module), exported by the real binary;
- the package built ahead of time once, with nvcc and torch's extension tooling
  (python setup.py build_ext --inplace), and imported: every kernel loads into the binding;
- its ops trace under torch.export and torch.compile (the fake implementations), refuse other
  shapes and CPU tensors with what the kernel was tuned for, fall back to the torch expression
  where asked; the drop-in module is the original class with its parameters, refuses other
  constructor arguments, falls back to the original forward where asked, and traces inside a
  model;
- the just-in-time build refuses an edited kernel and says why a failed build failed; a second
  package that defines the same ops is refused at import.

Needs torch (CPU is enough); exits 125 (skipped) without it. The GPU side (each op against its
torch expression, its time through PyTorch) is scripts/gpu-export-check.sh's.

Usage: ks_export_test.py SOURCE_DIR KERNELSKILL
"""

import contextlib
import glob
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                         os.path.join(os.path.dirname(__file__), "..", ".."))
KERNELSKILL = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else \
    os.path.join(SOURCE, "build", "bin", "kernelskill")
USER = os.path.join(SOURCE, "tests", "tools", "import_user")
IMPORTED = "my_blocks_scaledresidual"

sys.path.insert(0, os.path.join(SOURCE, "tools"))
sys.path.insert(0, USER)


def run(argv, **kwargs):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kwargs)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: exit {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def make_package(work):
    """Imports the module, runs a scripted campaign over it and relu, exports the winners into
    work/pkg and builds the package in place; returns the package folder."""
    import ks_import
    with contextlib.redirect_stdout(io.StringIO()):
        rc = ks_import.main(["--out", os.path.join(work, "tasks"), "--input", "f32[64,512]",
                             "--input", "f32[64,512]", "--init", "[512, 0.5]",
                             os.path.join(USER, "my_blocks.py") + ":ScaledResidual"])
    assert rc == 0, f"the import exited {rc}"
    with open(os.path.join(SOURCE, "tests", "cli", "export_campaign.toml")) as f:
        settings = f.read()
    with open(os.path.join(work, "campaign.toml"), "w") as f:
        f.write(f'gpus = [0]\n[campaign]\ntasks = ["tasks/{IMPORTED}.toml", '
                f'"{SOURCE}/tasks/quickstart/19_relu.toml"]\n' + settings)
    env = dict(os.environ, KS_NVCC=os.path.join(SOURCE, "tests", "actors", "fake_nvcc.sh"),
               KS_SCRIPTED_MODE="campaign", KS_SCRIPTED_DEVICES="1", KS_SCRIPTED_JOB_MS="5",
               KS_SCRIPTED_STATE_DIR=os.path.join(work, "worker-state"))
    worker = os.path.join(os.path.dirname(KERNELSKILL), "ks-scripted-worker")
    run([KERNELSKILL, "run", "campaign.toml", "--worker", worker, "--progress", "0"], cwd=work,
        env=env)
    done = run([KERNELSKILL, "export", "out", "--out", "pkg", "--name", "ks_test_ops",
                "--python", sys.executable], cwd=work)
    assert f"exported  {IMPORTED} as kernelskill::{IMPORTED}" in done.stdout, done.stdout
    folder = os.path.join(work, "pkg")
    env = {k: v for k, v in os.environ.items() if k != "KS_NVCC"}
    run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=folder, env=env)
    return folder


class Package(unittest.TestCase):
    """One package, built once, imported into this process."""

    @classmethod
    def setUpClass(cls):
        import torch
        cls.torch = torch
        cls.work = tempfile.mkdtemp(prefix="ks-export-test-")
        cls.folder = make_package(cls.work)
        sys.path.insert(0, cls.folder)
        import ks_test_ops
        cls.pkg = ks_test_ops

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def meta(self, *shape):
        return self.torch.empty(*shape, device="meta")

    def test_the_package_builds_ahead_of_time_and_every_kernel_loads_into_its_binding(self):
        self.assertTrue(glob.glob(os.path.join(self.folder, "ks_test_ops", "_C*.so")))
        for op in ("relu", IMPORTED):
            self.assertTrue(os.path.isfile(os.path.join(self.folder, "ks_test_ops", "kernels",
                                                        f"{op}.so")))
        self.assertEqual(set(self.pkg.status()), {"relu", IMPORTED})
        for op, state in self.pkg.status().items():
            self.assertEqual(state, "ready (built ahead of time (setup.py))", op)
        dump = self.torch._C._dispatch_dump("kernelskill::relu")
        self.assertIn("CUDA: registered at", dump)
        self.assertIn("ops.cpp", dump)

    def test_the_ops_trace_under_torch_export_with_the_tasks_output_shapes(self):
        torch = self.torch
        pkg = self.pkg

        class Model(torch.nn.Module):
            def forward(self, x, skip, gain):
                return pkg.relu(x) * 2, getattr(pkg, IMPORTED)(skip, x[:64, :512], gain)

        program = torch.export.export(Model(), (self.meta(1024, 2048), self.meta(64, 512),
                                                self.meta(512)))
        calls = [n for n in program.graph.nodes if n.op == "call_function"]
        targets = [str(n.target) for n in calls]
        self.assertIn("kernelskill.relu.default", targets)
        self.assertIn(f"kernelskill.{IMPORTED}.default", targets)
        relu = next(n for n in calls if str(n.target) == "kernelskill.relu.default")
        self.assertEqual(tuple(relu.meta["val"].shape), (1024, 2048))
        self.assertEqual(relu.meta["val"].dtype, torch.float32)

    def test_the_ops_trace_under_torch_compile_without_a_graph_break(self):
        torch = self.torch
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        compiled = torch.compile(lambda x: self.pkg.relu(x) + 1, backend=backend, fullgraph=True)
        out = compiled(self.meta(1024, 2048))
        self.assertEqual(tuple(out.shape), (1024, 2048))
        self.assertIn("torch.ops.kernelskill.relu.default", graphs[0].code)

    def test_other_shapes_are_refused_naming_what_the_kernel_was_tuned_for(self):
        torch = self.torch

        class Model(torch.nn.Module):
            def forward(self, x):
                return torch.ops.kernelskill.relu(x)

        with self.assertRaises(Exception) as caught:
            torch.export.export(Model(), (self.meta(4, 8),))
        self.assertIn("kernelskill::relu was tuned and verified for x: f32[1024, 2048] only; "
                      "got x: f32[4, 8]", str(caught.exception))
        with self.assertRaises(RuntimeError) as caught:
            self.pkg.relu(torch.rand(1024, 2048))
        self.assertIn("kernelskill::relu runs on CUDA tensors; got x: f32[1024, 2048] on cpu",
                      str(caught.exception))

    def test_fallback_runs_the_torch_expression_and_warns_once_per_signature(self):
        torch = self.torch
        x = torch.randn(4, 8)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            self.assertTrue(torch.equal(self.pkg.relu(x, fallback=True), torch.relu(x)))
            self.pkg.relu(x, fallback=True)
        messages = [str(w.message) for w in seen if "kernelskill::relu" in str(w.message)]
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("running its torch expression instead", messages[0])
        self.assertTrue(torch.equal(self.pkg.relu.torch(x), torch.relu(x)))

    def test_the_drop_in_module_is_the_original_class_with_its_signature_and_parameters(self):
        torch = self.torch
        import my_blocks
        exported = self.pkg.ScaledResidual
        self.assertEqual(exported.__mro__[1].__name__, "ScaledResidual")
        self.assertEqual(inspect.signature(exported.__mro__[1].__init__),
                         inspect.signature(my_blocks.ScaledResidual.__init__))
        block = exported(512, 0.5)
        original = my_blocks.ScaledResidual(512, 0.5)
        with torch.no_grad():
            original.gain.normal_()
        self.assertEqual(list(block.state_dict()), list(original.state_dict()))
        block.load_state_dict(original.state_dict())
        x, skip = torch.randn(64, 512), torch.randn(64, 512)
        with self.assertRaises(RuntimeError) as caught:
            block(x, skip)  # on the CPU: the kernel cannot run it
        self.assertIn("runs on CUDA tensors", str(caught.exception))
        block.ks_fallback = True
        self.assertTrue(torch.equal(block(x, skip), original(x, skip)))

    def test_the_drop_in_module_refuses_other_constructor_arguments(self):
        torch = self.torch
        block = self.pkg.ScaledResidual(512, alpha=0.1).to("meta")
        with self.assertRaises(RuntimeError) as caught:
            block(self.meta(64, 512), self.meta(64, 512))
        self.assertIn("constructed with (512, alpha=0.1); its kernel holds the constants of "
                      "ScaledResidual(512, 0.5)", str(caught.exception))
        self.pkg.ScaledResidual(512, alpha=0.5).to("meta")(self.meta(64, 512),
                                                           self.meta(64, 512))
        with self.assertRaises(RuntimeError) as caught:
            self.pkg.ScaledResidual(512, 0.5).verify()
        self.assertIn("move the module to a CUDA device", str(caught.exception))
        self.assertIsInstance(block, torch.nn.Module)

    def test_a_model_with_the_module_swapped_traces_the_exported_op(self):
        torch = self.torch
        pkg = self.pkg

        class Small(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = torch.nn.LayerNorm(512)
                self.block = pkg.ScaledResidual(512, 0.5)

            def forward(self, x, skip):
                return self.block(self.norm(x), skip)

        program = torch.export.export(Small().to("meta"), (self.meta(64, 512), self.meta(64, 512)))
        targets = [str(n.target) for n in program.graph.nodes if n.op == "call_function"]
        self.assertIn(f"kernelskill.{IMPORTED}.default", targets)
        self.assertIn("block.gain", program.state_dict)

    def test_the_record_keeps_the_kernels_provenance(self):
        record = self.pkg.record
        relu = record["ops"]["relu"]
        with open(os.path.join(self.folder, "ks_test_ops", "kernels", "relu.cu"), "rb") as f:
            import hashlib
            self.assertEqual(relu["sha256"], hashlib.sha256(f.read()).hexdigest())
        with open(os.path.join(self.work, "out", "results.json")) as f:
            results = {t["name"]: t for t in json.load(f)["tasks"]}
        self.assertEqual(relu["source_hash"], results["relu"]["winner"]["source_hash"])
        self.assertEqual(relu["measured"]["gpu"]["name"], "Scripted GPU")
        module = record["ops"][IMPORTED]["module"]
        self.assertEqual((module["entry"], module["init"], module["class"]),
                         ("ScaledResidual", "[512, 0.5]", "ScaledResidual"))

    def test_a_second_package_with_the_same_ops_is_refused_at_import(self):
        copy = os.path.join(self.work, "copy")
        shutil.copytree(os.path.join(self.folder, "ks_test_ops"), os.path.join(copy, "ks_other"))
        sys.path.insert(0, copy)
        try:
            with self.assertRaises(ImportError) as caught:
                import ks_other  # noqa: F401
            self.assertIn("kernelskill::", str(caught.exception))
            self.assertIn("another exported package with a task of that name", str(caught.exception))
        finally:
            sys.path.remove(copy)

    def test_the_just_in_time_build_refuses_an_edited_kernel_and_says_why_one_fails(self):
        copy = os.path.join(self.work, "jit")
        shutil.copytree(os.path.join(self.folder, "ks_test_ops"), os.path.join(copy, "ks_test_ops"),
                        ignore=shutil.ignore_patterns("_C*.so", "*.so"))
        script = ("import sys; sys.path.insert(0, sys.argv[1]); import ks_test_ops, json\n"
                  "try:\n    ks_test_ops.build()\nexcept ks_test_ops._build.BuildError as e:\n"
                  "    print(json.dumps({'error': str(e), 'status': ks_test_ops.status()}))\n")
        env = dict(os.environ, KERNELSKILL_NVCC="/bin/false",
                   KERNELSKILL_EXPORT_CACHE=os.path.join(self.work, "jit-cache"))
        done = run([sys.executable, "-c", script, copy], env=env)
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertIn("relu: nvcc failed", answer["error"])
        self.assertIn("ks_test_ops is not built: no CUDA device here", answer["status"]["relu"])
        with open(os.path.join(copy, "ks_test_ops", "kernels", "relu.cu"), "a") as f:
            f.write("// edited\n")
        done = run([sys.executable, "-c", script, copy], env=env)
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        self.assertIn("relu.cu is not the kernel the campaign verified", answer["error"])


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"torch is not installed for {sys.executable} (scripts/install-torch.sh): skipped")
        sys.exit(125)
    unittest.main(argv=[sys.argv[0]], verbosity=1)
