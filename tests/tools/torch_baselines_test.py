#!/usr/bin/env python3
"""Tests of tools/torch_baselines.py that need no torch and no GPU: manifests and suites, the
timing inputs' specs, the function an expression becomes, the worker's stop rule and
statistics, the baselines file and the command line (--dry-run).

And, with --torch, the whole path with torch on the CPU (CpuPath) alone: ctest runs that as a
test of its own with the interpreter that has torch (tests/tools/with_torch.sh), which exits
125 (skipped) where torch does not import.

Usage: torch_baselines_test.py SOURCE_DIR [KERNELSKILL [--torch]] (ctest passes them; SOURCE_DIR
defaults to two folders up; without KERNELSKILL the tests of the engine's reading skip)."""

import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                             os.path.join(os.path.dirname(__file__), "..", ".."))
KERNELSKILL = sys.argv.pop(1) if len(sys.argv) > 1 else None
spec = importlib.util.spec_from_file_location(
    "torch_baselines", os.path.join(SOURCE_DIR, "tools", "torch_baselines.py"))
tb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tb)

L1 = os.path.join(SOURCE_DIR, "tasks", "kernelbench-l1")
QUICKSTART = os.path.join(SOURCE_DIR, "tasks", "quickstart")

GELU = """
name = "gelu_wide"
family = "elementwise"
inputs  = [ { name = "x", dtype = "f32", shape = [8192, 8192], init = "normal" } ]
outputs = [ { name = "y", dtype = "f32", shape = [8192, 8192] } ]
params  = { op = "gelu(x)" }
cost = { flops = 6.7e8, bytes = 5.36870912e8 }
torch = "F.gelu(x)"
"""


class Folder:
    """A temporary folder that writes files by name."""

    def __init__(self, test):
        self.tmp = tempfile.TemporaryDirectory()
        test.addCleanup(self.tmp.cleanup)
        self.path = self.tmp.name

    def write(self, name, text):
        p = os.path.join(self.path, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p


def run_main(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = tb.main(list(argv))
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class Manifests(unittest.TestCase):
    def test_a_suite_folder_gives_its_manifests_sorted_by_file_name(self):
        paths = tb.manifest_paths([L1])
        self.assertEqual(len(paths), 8)
        self.assertEqual(paths, sorted(paths))
        self.assertTrue(all(p.endswith(".toml") for p in paths))

    def test_the_starter_suite_reads_from_its_toml_alone(self):
        tasks = {t["name"]: t for t in tb.read_tasks([L1])}
        self.assertEqual(sorted(tasks), ["cumsum", "matmul", "matvec", "maxpool", "relu",
                                         "rmsnorm", "softmax", "sum"])
        self.assertEqual(tasks["matvec"]["inputs"][1]["shape"], [1048576, 1])
        self.assertEqual(tasks["relu"]["inputs"][0]["init"], "normal")

    def test_a_dtype_spelled_as_torch_spells_it_is_read_canonically(self):
        d = Folder(self)
        p = d.write("t.toml", GELU.replace('dtype = "f32", shape = [8192, 8192], init',
                                           'dtype = "float32", shape = [8192, 8192], init'))
        self.assertEqual(tb.read_manifest(p)["inputs"][0]["dtype"], "f32")

    def test_a_path_that_does_not_exist_is_an_error_naming_it(self):
        with self.assertRaisesRegex(tb.ManifestError, "nowhere.toml: no such file"):
            tb.manifest_paths(["nowhere.toml"])

    def test_two_tasks_of_one_name_are_refused_since_the_file_is_keyed_by_name(self):
        with self.assertRaisesRegex(tb.ManifestError, "'relu' is also the name of"):
            tb.read_tasks([L1, QUICKSTART])

    def test_invalid_toml_is_an_error_naming_the_file(self):
        d = Folder(self)
        p = d.write("bad.toml", "name = \n")
        with self.assertRaisesRegex(tb.ManifestError, "bad.toml: not valid TOML"):
            tb.read_manifest(p)

    def test_a_tensor_without_a_known_dtype_is_an_error(self):
        d = Folder(self)
        p = d.write("t.toml", GELU.replace('dtype = "f32", shape = [8192, 8192], init',
                                           'dtype = "f8", shape = [8192, 8192], init'))
        with self.assertRaisesRegex(tb.ManifestError, r"inputs\[0\] \(x\): dtype 'f8'"):
            tb.read_manifest(p)

    def test_a_manifest_without_torch_reads_with_none(self):
        d = Folder(self)
        p = d.write("t.toml", GELU.replace('torch = "F.gelu(x)"', ""))
        self.assertIsNone(tb.read_manifest(p)["torch"])


@unittest.skipUnless(KERNELSKILL, "no kernelskill binary given")
class EngineReading(unittest.TestCase):
    """The manifests as `kernelskill task show --json` reads them."""

    def test_a_family_task_gets_the_torch_expression_its_family_derives(self):
        tasks = {t["name"]: t for t in tb.read_tasks([L1], KERNELSKILL)}
        self.assertEqual(len(tasks), 8)
        self.assertEqual(tasks["softmax"]["torch"], "torch.softmax(x, dim=1)")
        self.assertEqual(tasks["cumsum"]["torch"], "torch.cumsum(x, dim=1)")
        self.assertEqual(tb.signature(tasks["matvec"]["inputs"]),
                         "A:f32[2048,1048576],B:f32[1048576,1]")
        self.assertTrue(all(t["torch"] for t in tasks.values()))

    def test_a_manifest_the_engine_rejects_is_an_error_with_its_message(self):
        d = Folder(self)
        p = d.write("bad.toml", GELU.replace('family = "elementwise"', 'family = 3'))
        with self.assertRaisesRegex(tb.ManifestError, "bad.toml"):
            tb.read_tasks([p], KERNELSKILL)

    def test_dry_run_lists_every_task_its_inputs_and_writes_nothing(self):
        d = Folder(self)
        target = os.path.join(d.path, "b.json")
        rc, out, err = run_main("--dry-run", "--kernelskill", KERNELSKILL, L1, "-o", target)
        self.assertEqual(rc, 0, err)
        self.assertIn("would time 8 task(s)", out)
        self.assertIn("softmax: torch.softmax(x, dim=1)", out)
        self.assertIn("  x: f32[4096, 393216], uniform on [0, 1)", out)
        self.assertIn("mode default", out)
        self.assertFalse(os.path.exists(target))


class Inputs(unittest.TestCase):
    def test_timing_draws_uniform_on_0_1_unless_positive_or_randint(self):
        self.assertEqual(tb.timing_distribution({"init": "normal"}), "uniform on [0, 1)")
        self.assertEqual(tb.timing_distribution({"init": "uniform"}), "uniform on [0, 1)")
        self.assertEqual(tb.timing_distribution({"init": "positive"}), "uniform on [0.5, 1.5)")
        self.assertEqual(tb.timing_distribution({"init": "randint", "low": 0, "high": 7}),
                         "integers on [0, 7)")

    def test_randint_needs_low_below_high(self):
        d = Folder(self)
        p = d.write("t.toml", GELU.replace('init = "normal"', 'init = "randint", low = 3, high = 3'))
        with self.assertRaisesRegex(tb.ManifestError, "randint needs integers low < high"):
            tb.read_manifest(p)

    def test_the_signature_names_every_tensor_with_dtype_and_shape(self):
        task = {t["name"]: t for t in tb.read_tasks([L1])}["matvec"]
        self.assertEqual(tb.signature(task["inputs"]), "A:f32[2048,1048576],B:f32[1048576,1]")

    def test_a_task_counts_one_set_of_inputs_and_outputs(self):
        task = {t["name"]: t for t in tb.read_tasks([L1])}["relu"]
        self.assertEqual(tb.task_bytes(task), 2 * 4096 * 393216 * 4)


class Expression(unittest.TestCase):
    def test_the_expression_becomes_a_function_of_the_inputs_by_name(self):
        task = {"manifest": "m.toml", "torch": "a + 2 * b",
                "inputs": [{"name": "a"}, {"name": "b"}]}
        scope = {}
        exec(tb.function_source(task), scope)
        self.assertEqual(scope["torch_expression"](1, 3), 7)
        self.assertEqual(scope["torch_expression"](b=1, a=3), 5)

    def test_an_input_named_like_a_keyword_or_torch_cannot_be_bound(self):
        for bad in ("lambda", "torch", "F", "x-y"):
            task = {"manifest": "m.toml", "torch": "x", "inputs": [{"name": bad}]}
            with self.assertRaisesRegex(tb.ManifestError, "cannot be bound"):
                tb.function_source(task)


class Measurement(unittest.TestCase):
    def test_percentiles_interpolate_linearly_as_the_worker_does(self):
        self.assertEqual(tb.percentile([1.0, 2.0, 3.0, 4.0], 0.5), 2.5)
        self.assertAlmostEqual(tb.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.1), 1.4)
        self.assertEqual(tb.percentile([], 0.5), 0.0)

    def test_a_tight_first_batch_of_ten_is_enough(self):
        batches = []

        def run(n):
            batches.append(n)
            return [1.0] * n
        r = tb.measure(run)
        self.assertEqual(batches, [10])
        self.assertEqual(r, {"median_ms": 1.0, "p10_ms": 1.0, "p90_ms": 1.0, "trials": 10})

    def test_a_spread_first_batch_asks_for_more_until_the_median_settles(self):
        batches = []

        def run(n):
            batches.append(n)
            return [1.0 + 0.1 * (i % 2) for i in range(n)]
        r = tb.measure(run, stable_rel=0.005)
        self.assertGreater(len(batches), 1)
        self.assertGreaterEqual(r["trials"], 10)
        self.assertLessEqual(r["p10_ms"], r["median_ms"])
        self.assertLessEqual(r["median_ms"], r["p90_ms"])

    def test_timing_stops_at_max_ms_of_timed_gpu_time(self):
        calls = [0]

        def run(n):
            calls[0] += n
            return [100.0 * (1 + (calls[0] + i) % 3) for i in range(n)]  # never stable
        r = tb.measure(run, min_trials=10, max_ms=500.0, stable_rel=0.0)
        self.assertEqual(r["trials"], 10)  # 10 calls of >= 100 ms already pass 500 ms

    def test_head_to_head_calls_a_gap_within_the_same_versions_spread_noise(self):
        r = tb.head_to_head({"kernel": [1.00, 1.03, 1.01], "compile": [0.99, 1.00, 1.02]})
        self.assertAlmostEqual(r["kernel"]["median_ms"], 1.01)
        self.assertAlmostEqual(r["compile"]["ratio"], 1.00 / 1.01)
        self.assertAlmostEqual(r["compile"]["noise"], 0.03 / 1.00)  # the larger spread
        self.assertFalse(r["compile"]["slower_beyond_noise"])

    def test_head_to_head_flags_a_kernel_slower_in_every_round_beyond_the_spread(self):
        r = tb.head_to_head({"kernel": [1.05, 1.06, 1.05], "eager": [1.00, 1.01, 1.00],
                             "compile": [1.10, 1.04, 1.12]})
        self.assertTrue(r["eager"]["slower_beyond_noise"])
        # faster than compile at the median: never flagged, whatever the rounds
        self.assertFalse(r["compile"]["slower_beyond_noise"])
        self.assertGreater(r["compile"]["ratio"], 1.0)

    def test_head_to_head_needs_every_round_slower(self):
        # 5% slower at the median, beyond the kernel's 4.8% spread, but level in round three
        r = tb.head_to_head({"kernel": [1.05, 1.05, 1.00], "eager": [1.00, 1.00, 1.00]})
        self.assertGreater(1.05 / 1.00 - 1, r["eager"]["noise"])
        self.assertFalse(r["eager"]["slower_beyond_noise"])

    def test_never_fewer_than_min_trials(self):
        r = tb.measure(lambda n: [5.0] * n, min_trials=25, max_ms=1.0)
        self.assertGreaterEqual(r["trials"], 25)


class File(unittest.TestCase):
    def test_the_file_is_written_whole_and_reads_back(self):
        d = Folder(self)
        path = os.path.join(d.path, "sub", "b.json")
        doc = tb.new_document("NVIDIA H100 80GB HBM3", "2.11.0", "13.0", {"compile_mode": "default"})
        doc["tasks"]["relu"] = {"eager": {"median_ms": 4.3, "p10_ms": 4.2, "p90_ms": 4.4,
                                          "trials": 10}}
        tb.write_document(path, doc)
        with open(path, encoding="utf-8") as f:
            back = json.load(f)
        self.assertEqual(back["format"], "kernelskill-torch-baselines")
        self.assertEqual(back["version"], 1)
        self.assertEqual(back["device"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(back["tasks"]["relu"]["eager"]["median_ms"], 4.3)
        self.assertEqual([f for f in os.listdir(os.path.dirname(path))], ["b.json"])

    def test_merging_keeps_other_tasks_of_the_same_device_only(self):
        d = Folder(self)
        path = os.path.join(d.path, "b.json")
        old = tb.new_document("GPU A", "2.11.0", "13.0", {})
        old["tasks"] = {"relu": {"error": "old"}, "sum": {"error": "kept"}}
        tb.write_document(path, old)
        new = tb.new_document("GPU A", "2.11.0", "13.0", {})
        new["tasks"] = {"relu": {"error": "new"}}
        merged = tb.merge_into(path, new)
        self.assertEqual(merged["tasks"]["relu"]["error"], "new")
        self.assertEqual(merged["tasks"]["sum"]["error"], "kept")
        other = tb.new_document("GPU B", "2.11.0", "13.0", {})
        with self.assertRaisesRegex(tb.ManifestError, "measured on 'GPU A'"):
            tb.merge_into(path, other)


class CommandLine(unittest.TestCase):
    def test_dry_run_of_toml_alone_lists_a_manifests_own_torch(self):
        d = Folder(self)
        p = d.write("t.toml", GELU)
        target = os.path.join(d.path, "b.json")
        rc, out, err = run_main("--dry-run", "--kernelskill", "none", p, "-o", target)
        self.assertEqual(rc, 0, err)
        self.assertIn("would time 1 task(s)", out)
        self.assertIn("gelu_wide: F.gelu(x)", out)
        self.assertIn("  x: f32[8192, 8192], uniform on [0, 1)", out)
        self.assertFalse(os.path.exists(target))

    def test_dry_run_says_a_task_without_torch_is_recorded_as_an_error(self):
        d = Folder(self)
        p = d.write("t.toml", GELU.replace('torch = "F.gelu(x)"', ""))
        rc, out, _ = run_main("--dry-run", "--kernelskill", "none", p)
        self.assertEqual(rc, 0)
        self.assertIn("gelu_wide: no torch expression (neither the manifest's nor its "
                      "family's): recorded as an error", out)

    def test_a_bad_manifest_exits_2_naming_it(self):
        d = Folder(self)
        p = d.write("bad.toml", "name = [\n")
        rc, _, err = run_main("--dry-run", "--kernelskill", "none", p)
        self.assertEqual(rc, 2)
        self.assertIn("bad.toml: not valid TOML", err)

    def test_bad_timing_options_are_usage_errors(self):
        rc, _, err = run_main("--dry-run", "--kernelskill", "none", "--min-trials", "0", L1)
        self.assertEqual(rc, 2)
        self.assertIn("--min-trials", err)


@unittest.skipUnless(importlib.util.find_spec("torch"), "torch does not import here")
class CpuPath(unittest.TestCase):
    """The whole path with torch on the CPU (--cpu --skip-compile: compiling takes minutes)."""

    def test_a_run_writes_timings_errors_and_output_shape_checks_per_task(self):
        d = Folder(self)
        good = d.write("good.toml", GELU.replace("[8192, 8192]", "[64, 128]"))
        bad = d.write("bad.toml", GELU.replace('name = "gelu_wide"', 'name = "bad"')
                      .replace("F.gelu(x)", "torch.nosuch(x)"))
        wrong = d.write("wrong.toml", GELU.replace('name = "gelu_wide"', 'name = "wrong"')
                        .replace("F.gelu(x)", "x.sum(dim=0)"))
        target = os.path.join(d.path, "b.json")
        rc, _, err = run_main("--cpu", "--skip-compile", "--kernelskill", "none", "--max-ms",
                              "50", good, bad, wrong, "-o", target)
        self.assertEqual(rc, 0, err)
        with open(target, encoding="utf-8") as f:
            doc = json.load(f)
        gelu = doc["tasks"]["gelu_wide"]
        self.assertGreater(gelu["eager"]["median_ms"], 0)
        self.assertGreaterEqual(gelu["eager"]["trials"], 10)
        self.assertEqual(gelu["compile"], {"error": "not timed (--skip-compile)"})
        self.assertEqual(gelu["inputs"], "x:f32[64,128]")
        self.assertTrue(gelu["output_shapes_match"])
        self.assertIn("has no attribute 'nosuch'", doc["tasks"]["bad"]["error"])
        self.assertFalse(doc["tasks"]["wrong"]["output_shapes_match"])
        self.assertTrue(doc["device"].startswith("cpu"))


if __name__ == "__main__":
    TORCH_ONLY = sys.argv[1:] == ["--torch"]
    if TORCH_ONLY and importlib.util.find_spec("torch") is None:
        print(f"torch does not import for {sys.executable} (scripts/install-torch.sh): skipped")
        sys.exit(125)
    LOADER = unittest.TestLoader()
    SUITE = unittest.TestSuite()
    for case in [v for v in list(globals().values())
                 if isinstance(v, type) and issubclass(v, unittest.TestCase)]:
        if (case is CpuPath) == TORCH_ONLY:
            SUITE.addTests(LOADER.loadTestsFromTestCase(case))
    sys.exit(0 if unittest.TextTestRunner(verbosity=1).run(SUITE).wasSuccessful() else 1)
