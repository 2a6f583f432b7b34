#!/usr/bin/env python3
"""tools/ks_import.py on problem files we wrote ourselves (tests/tools/import_problems, in
KernelBench's format, and tests/tools/import_user, a user's own code): what each becomes (a
family op or a graph of them, with which params), the idioms it must recognize, the inputs it
draws, the module table the baselines and --verify run. Needs torch (CPU is enough: tracing
runs on the meta device); exits 125 (skipped) without it.

Usage: ks_import_test.py SOURCE_DIR
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import tomllib
import unittest

SOURCE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.join(os.path.dirname(__file__), "..", "..")
TOOL = os.path.join(SOURCE, "tools", "ks_import.py")
PROBLEMS = os.path.join(SOURCE, "tests", "tools", "import_problems")
USER = os.path.join(SOURCE, "tests", "tools", "import_user", "my_blocks.py")


sys.path.insert(0, os.path.dirname(TOOL))


def run_import(*args):
    """Runs the importer with --json into a fresh folder, in this process (torch is imported
    once for the whole test); returns (rc, records, folder)."""
    import ks_import
    out = tempfile.mkdtemp(prefix="ks-import-test-")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        rc = ks_import.main(["--json", "--out", out, *args])
    records = [json.loads(line) for line in stdout.getvalue().splitlines() if line.startswith("{")]
    return rc, records, out


def write_problem(folder, name, body):
    path = os.path.join(folder, name + ".py")
    with open(path, "w") as f:
        f.write("import torch\nimport torch.nn as nn\n\n" + body)
    return path


def manifest(record):
    with open(record["manifest"], "rb") as f:
        return tomllib.load(f)


class Folder(unittest.TestCase):
    """The folder of our problem files, imported at once."""

    @classmethod
    def setUpClass(cls):
        cls.rc, records, cls.out = run_import(PROBLEMS)
        cls.records = {r["name"]: r for r in records}

    def test_every_problem_but_the_sort_imports_and_the_exit_code_says_one_did_not(self):
        self.assertEqual(self.rc, 2)
        failed = [n for n, r in self.records.items() if r["status"] != "imported"]
        self.assertEqual(failed, ["18_sort_unsupported"])
        reason = self.records["18_sort_unsupported"]["reason"]
        self.assertIn("no family states aten.sort", reason)
        self.assertEqual(len(self.records), 21)

    def test_single_ops_become_family_manifests_with_their_params(self):
        m = manifest(self.records["02_log_softmax_dim0"])
        self.assertEqual((m["family"], m["params"]), ("softmax", {"op": "log_softmax", "dim": 0}))
        m = manifest(self.records["04_max_pool3d"])
        self.assertEqual(m["family"], "pool")
        self.assertEqual(m["params"]["dims"], 3)
        self.assertEqual(m["params"]["kernel_size"], [3, 3, 3])
        self.assertEqual(m["params"]["stride"], [2, 2, 2])
        self.assertEqual(m["outputs"][0]["shape"], [8, 32, 16, 32, 32])
        m = manifest(self.records["05_argmin_keepdim"])
        self.assertEqual(m["params"], {"op": "argmin", "dim": 1, "keepdim": True})
        self.assertEqual(m["outputs"][0]["dtype"], "i64")

    def test_module_parameters_become_inputs_and_constants_params(self):
        m = manifest(self.records["03_group_norm_affine"])
        self.assertEqual(m["family"], "channel_norm")
        self.assertEqual(m["params"], {"op": "group", "eps": 1e-6, "groups": 12, "affine": True})
        self.assertEqual([i["name"] for i in m["inputs"]], ["x", "norm_weight", "norm_bias"])
        self.assertEqual(m["inputs"][1]["shape"], [96])
        self.assertEqual(m["module"]["parameters"],
                         {"norm.weight": "norm_weight", "norm.bias": "norm_bias"})
        self.assertEqual(m["module"]["init"], "[96, 12]")
        self.assertEqual(m["module"]["arguments"], [{"input": "x"}])

    def test_a_linear_layer_is_a_transposed_matmul_its_bias_and_activation_its_epilogue(self):
        m = manifest(self.records["07_linear_gelu"])
        self.assertEqual(m["family"], "matmul")
        self.assertEqual([i["name"] for i in m["inputs"]], ["x", "fc_weight", "fc_bias"])
        self.assertTrue(m["params"]["transpose_b"])
        op = m["params"]["epilogue"]
        self.assertIn("gelu(", op)
        self.assertIn("acc + fc_bias", op)
        self.assertIn("0.5", op)

    def test_a_bool_mask_is_a_u8_input_drawn_as_0_or_1(self):
        m = manifest(self.records["08_masked_mean"])
        keep = [i for i in m["inputs"] if i["name"] == "keep"][0]
        self.assertEqual((keep["dtype"], keep["init"], keep["low"], keep["high"]),
                         ("u8", "randint", 0, 2))
        self.assertEqual(m["module"]["arguments"][1], {"input": "keep", "dtype": "bool"})
        # The product is the mean's map, computed as the mean reads x and the mask.
        self.assertEqual(m["family"], "reduce")
        self.assertEqual(m["params"], {"op": "mean", "dim": 1, "map": "x * keep"})

    def test_idioms_claim_their_subgraphs(self):
        # flip(cumprod(flip(x))) is one reverse scan.
        m = manifest(self.records["06_reverse_cumprod"])
        self.assertEqual((m["family"], m["params"]),
                         ("scan", {"op": "cumprod", "dim": 1, "reverse": True}))
        # F.normalize is an l2 norm with its eps.
        m = manifest(self.records["11_row_normalize"])
        self.assertEqual((m["family"], m["params"]), ("norm", {"op": "l2", "eps": 1e-8, "dim": 1}))
        # triu(A @ B.T) is a triangular matmul with B transposed.
        m = manifest(self.records["12_upper_product"])
        self.assertEqual(m["params"], {"transpose_b": True, "triangle": "upper"})

    def test_an_rnn_cells_cat_feeds_its_linear_layer_and_its_split_halves_are_narrow_views(self):
        m = manifest(self.records["20_rnn_cell_cat"])
        # tanh(linear) is the product's epilogue; each half is copied, then added.
        self.assertEqual([n["family"] for n in m["nodes"]],
                         ["concat", "matmul"] + ["elementwise"] * 3)
        self.assertEqual(m["nodes"][1]["params"]["epilogue"], "tanh((acc + i2h_bias))")
        self.assertEqual(m["nodes"][0]["params"], {"dim": 1})
        self.assertEqual(sorted(v["narrow"] for v in m["views"] if "narrow" in v),
                         [[1, 0, 256], [1, 256, 256]])

    def test_a_losss_pointwise_terms_are_the_reductions_map(self):
        # The terms are never written: the sum reads the two inputs through its map.
        m = manifest(self.records["09_smooth_l1_sum"])
        self.assertEqual(m["family"], "reduce")
        self.assertEqual(m["params"]["op"], "sum")
        self.assertIn("0.25", m["params"]["map"])
        self.assertEqual(len(m["inputs"]), 2)
        self.assertEqual(m["outputs"][0]["shape"], [])
        m = manifest(self.records["10_nll_of_log_softmax"])
        ops = sorted(n["params"].get("op", n["family"]) for n in m["nodes"])
        self.assertIn("logsumexp", ops)
        self.assertIn("gather", [n["family"] for n in m["nodes"]])
        labels = [i for i in m["inputs"] if i["name"] == "labels"][0]
        self.assertEqual((labels["dtype"], labels["low"], labels["high"]), ("i64", 0, 1000))

    def test_two_sums_of_one_anchor_are_one_reduce_of_two_maps(self):
        # Both distances read the anchor: one pass, two outputs ("a; b"), then the margin.
        m = manifest(self.records["19_two_distances_hinge"])
        self.assertEqual(m["family"], "graph")
        first = m["nodes"][0]
        self.assertEqual((first["family"], first["params"]["op"]), ("reduce", "sum"))
        self.assertEqual(len(first["outputs"]), 2)
        self.assertEqual(first["params"]["map"].count(";"), 1)
        self.assertEqual(sorted(first["inputs"]), ["anchor", "far", "near"])
        self.assertEqual(len(m["nodes"]), 2)
        self.assertEqual(m["nodes"][1]["params"]["op"], "mean")

    def test_attention_is_two_products_around_a_softmax_writing_the_output_through_a_view(self):
        m = manifest(self.records["13_attention"])
        nodes = m["nodes"]
        self.assertEqual([n["family"] for n in nodes], ["matmul", "softmax", "matmul"])
        self.assertAlmostEqual(nodes[0]["params"]["alpha"], 0.125)
        self.assertTrue(nodes[0]["params"]["transpose_b"])
        out_view = [v for v in m["views"] if v["of"] == "y"]
        self.assertEqual(len(out_view), 1)
        self.assertEqual(nodes[2]["outputs"], [out_view[0]["name"]])

    def test_a_convolution_is_the_conv_family_with_its_weight_and_bias_as_torch_holds_them(self):
        m = manifest(self.records["15_conv2d_strided_grouped"])
        self.assertEqual(m["family"], "conv")
        self.assertEqual(m["params"], {"stride": [2, 1], "padding": [1, 2], "dilation": [1, 2],
                                       "groups": 3})
        self.assertEqual([(i["name"], i["shape"]) for i in m["inputs"]],
                         [("x", [4, 12, 33, 40]), ("conv_weight", [18, 4, 3, 5]),
                          ("conv_bias", [18])])
        self.assertEqual(m["outputs"][0]["shape"], [4, 18, 17, 36])
        self.assertEqual(m["module"]["parameters"],
                         {"conv.weight": "conv_weight", "conv.bias": "conv_bias"})
        self.assertEqual(m["module"]["init"], "[12, 18, 3]")
        # Sums of 4 channels x 15 taps: atol grows with them.
        self.assertEqual(m["tolerance"]["atol"], 6e-5)

    def test_a_transposed_convolution_keeps_its_output_padding_and_has_no_bias_when_torch_has_none(self):
        m = manifest(self.records["16_conv_transpose3d_output_padding"])
        self.assertEqual(m["family"], "conv")
        self.assertEqual(m["params"], {"transposed": True, "stride": 2, "padding": 1,
                                       "output_padding": [1, 0, 1]})
        self.assertEqual([(i["name"], i["shape"]) for i in m["inputs"]],
                         [("x", [2, 8, 6, 7, 5]), ("up_weight", [8, 6, 3, 4, 3])])
        self.assertEqual(m["outputs"][0]["shape"], [2, 6, 12, 14, 10])

    def test_a_depthwise_convolution_with_same_padding_pads_half_the_kernel(self):
        m = manifest(self.records["17_depthwise_conv1d"])
        self.assertEqual((m["family"], m["params"]), ("conv", {"padding": 3, "groups": 32}))
        self.assertEqual(m["inputs"][1]["shape"], [32, 1, 7])
        self.assertEqual(m["outputs"][0]["shape"], [8, 32, 1000])

    def test_a_convolution_and_its_activation_are_one_conv_with_an_epilogue(self):
        m = manifest(self.records["14_conv3x3_relu"])
        self.assertEqual(m["family"], "conv")
        self.assertEqual(m["params"], {"padding": 1, "epilogue": "relu(acc)", "bias": True})
        self.assertEqual([i["name"] for i in m["inputs"]], ["x", "conv_weight", "conv_bias"])

    def test_the_module_table_keeps_the_source_and_its_hash(self):
        m = manifest(self.records["01_gelu_tanh"])
        self.assertEqual(m["params"], {"op": "gelu_tanh(x)"})
        with open(os.path.join(PROBLEMS, "01_gelu_tanh.py")) as f:
            self.assertEqual(m["module"]["source"], f.read())
        self.assertEqual(m["module"]["entry"], "Model")
        self.assertEqual(len(m["module"]["sha256"]), 64)


class Chains(unittest.TestCase):
    """Problems written here, one idea each."""

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="ks-import-problems-")

    def one(self, body):
        path = write_problem(self.folder, "p", body)
        rc, records, _ = run_import(path)
        self.assertEqual(len(records), 1, records)
        self.assertEqual(records[0]["status"], "imported", records[0].get("reason"))
        return manifest(records[0])

    def test_a_product_read_twice_keeps_its_epilogue_a_node_of_its_own(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, x, w):\n"
                     "        c = x @ w\n        return torch.relu(c) + torch.sigmoid(c).sum(1, keepdim=True)\n"
                     "def get_inputs():\n    return [torch.rand(64, 32), torch.rand(32, 48)]\n"
                     "def get_init_inputs():\n    return []\n")
        product = [n for n in m["nodes"] if n["family"] == "matmul"]
        self.assertEqual(len(product), 1)
        self.assertNotIn("epilogue", product[0]["params"])

    def test_x_times_sigmoid_x_is_one_elementwise_op(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, x):\n"
                     "        return x * torch.sigmoid(x)\n"
                     "def get_inputs():\n    return [torch.rand(64, 128)]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertEqual(m["family"], "elementwise")
        self.assertEqual(m["params"]["op"], "x * sigmoid(x)")

    def test_an_input_under_a_log_is_drawn_positive(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, x):\n"
                     "        return torch.log(x) * 2.0\n"
                     "def get_inputs():\n    return [torch.rand(64, 128)]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertEqual(m["inputs"][0]["init"], "positive")

    def test_an_exclusive_scan_written_with_cat_is_one_scan(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, x):\n"
                     "        c = torch.cumsum(x.narrow(1, 0, x.size(1) - 1), dim=1)\n"
                     "        return torch.cat((torch.zeros_like(x[:, :1]), c), dim=1)\n"
                     "def get_inputs():\n    return [torch.rand(64, 128)]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertEqual(m["params"], {"op": "cumsum", "dim": 1, "exclusive": True})

    def test_cat_is_a_concat_node_and_a_tensor_given_twice_is_read_through_an_alias(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, x):\n"
                     "        return torch.cat([torch.relu(x), x, x], dim=1)\n"
                     "def get_inputs():\n    return [torch.rand(8, 16, 4)]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertEqual(m["family"], "graph")
        cat = [n for n in m["nodes"] if n["family"] == "concat"]
        self.assertEqual(len(cat), 1)
        self.assertEqual(cat[0]["params"], {"dim": 1})
        self.assertEqual(len(set(cat[0]["inputs"])), 3)
        self.assertEqual(m["outputs"][0]["shape"], [8, 48, 4])
        self.assertIn({"name": cat[0]["inputs"][2], "of": "x", "shape": [8, 16, 4]}, m["views"])

    def test_split_chunk_and_unbind_are_narrow_views_and_stack_a_concat(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, x):\n"
                     "        a, b = x.split(48, dim=1)\n"
                     "        c, d = torch.chunk(x, 2, dim=0)\n"
                     "        rows = x.unbind(0)\n"
                     "        return torch.stack([a.sum(1), b.sum(1), rows[3][:8] + rows[5][:8],"
                     " torch.cat([c.sum(1), d.sum(1)])], dim=1)\n"
                     "def get_inputs():\n    return [torch.rand(8, 64)]\n"
                     "def get_init_inputs():\n    return []\n")
        narrows = [v["narrow"] for v in m["views"] if "narrow" in v]
        self.assertIn([1, 0, 48], narrows)
        self.assertIn([1, 48, 16], narrows)
        self.assertIn([0, 4, 4], narrows)
        self.assertIn([0, 3, 1], narrows)
        cat = [n for n in m["nodes"] if n["family"] == "concat"]
        self.assertEqual([n["params"] for n in cat], [{"dim": 0}, {"dim": 1}])
        self.assertEqual(m["outputs"][0]["shape"], [8, 4])

    def test_a_slice_with_a_step_is_views_of_whole_groups(self):
        import ks_import
        import torch
        # The plan against torch's own slicing, for steps, starts and ends of every kind.
        for extent in (6, 7, 9, 12):
            x = torch.arange(extent)
            for step in (2, 3, 5):
                for start in range(0, extent):
                    for end in (start + 1, extent - 1, extent):
                        try:
                            whole, residue, first, count = ks_import.step_plan(
                                extent, start, end, step)
                        except ks_import.ImportFailure:
                            self.assertGreaterEqual(start + ((end - start - 1) // step) * step,
                                                    extent // step * step)
                            continue
                        got = x[:whole].view(whole // step, step)[first:first + count, residue]
                        self.assertEqual(got.tolist(), x[start:end:step].tolist(),
                                         (extent, start, end, step))
        # In a module: x[:, 1::2] of an even extent, and one reaching a partial group refused.
        m = self.one("class Model(nn.Module):\n    def forward(self, x):\n"
                     "        return x[:, 1::2] * 2.0\n"
                     "def get_inputs():\n    return [torch.rand(8, 64, 16)]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertIn({"shape": [8, 32, 2, 16]}, [{k: v for k, v in view.items()
                                                   if k == "shape"} for view in m["views"]])
        self.assertIn([2, 1, 1], [v["narrow"] for v in m["views"] if "narrow" in v])
        self.assertEqual(m["outputs"][0]["shape"], [8, 32, 16])
        folder = tempfile.mkdtemp(prefix="ks-import-test-")
        path = write_problem(folder, "odd_step", "class Model(nn.Module):\n"
                             "    def forward(self, x):\n        return x[:, ::2] * 2.0\n"
                             "def get_inputs():\n    return [torch.rand(8, 63)]\n"
                             "def get_init_inputs():\n    return []\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 2)
        self.assertIn("a slice with step 2 that reaches the last 1 element(s) of a dim of 63",
                      records[0]["reason"])

    def test_a_scalar_argument_becomes_a_constant_of_the_op(self):
        m = self.one("class Model(nn.Module):\n    def forward(self, a, s):\n"
                     "        return a * s\n"
                     "def get_inputs():\n    return [torch.rand(64, 128), 2.5]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertEqual(m["params"]["op"], "a * 2.5")
        self.assertEqual(m["module"]["arguments"], [{"input": "a"}, {"value": "2.5"}])

    def test_a_pointwise_convolution_is_a_matmul_over_the_channels(self):
        m = self.one("class Model(nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.c = nn.Conv2d(32, 64, 1, bias=False)\n"
                     "    def forward(self, x):\n        return self.c(x)\n"
                     "def get_inputs():\n    return [torch.rand(4, 32, 16, 16)]\n"
                     "def get_init_inputs():\n    return []\n")
        self.assertEqual([n["family"] for n in m["nodes"]], ["matmul"])

    def test_every_form_of_a_convolution_maps_onto_the_conv_family(self):
        # F.conv2d with padding="valid", F.conv_transpose1d with dilation and groups, and
        # aten.convolution itself (what torch.export keeps of a traced nn.Conv).
        m = self.one("class Model(nn.Module):\n    def forward(self, x, w, v):\n"
                     "        a = nn.functional.conv2d(x, w, padding='valid', stride=2)\n"
                     "        return a, nn.functional.conv_transpose1d(x.flatten(2), v, stride=3, "
                     "dilation=2, groups=2, output_padding=1)\n"
                     "def get_inputs():\n    return [torch.rand(2, 4, 9, 9), torch.rand(6, 4, 3, 3), "
                     "torch.rand(4, 3, 5)]\n"
                     "def get_init_inputs():\n    return []\n")
        convs = [n for n in m["nodes"] if n["family"] == "conv"]
        self.assertEqual([n["params"] for n in convs],
                         [{"stride": 2}, {"transposed": True, "stride": 3, "dilation": 2,
                                          "output_padding": 1, "groups": 2}])

    def test_padding_same_with_an_even_kernel_is_refused_with_its_reason(self):
        path = write_problem(self.folder, "even",
                             "class Model(nn.Module):\n    def __init__(self):\n"
                             "        super().__init__()\n"
                             "        self.c = nn.Conv1d(4, 4, 4, padding='same')\n"
                             "    def forward(self, x):\n        return self.c(x)\n"
                             "def get_inputs():\n    return [torch.rand(2, 4, 32)]\n"
                             "def get_init_inputs():\n    return []\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 2)
        self.assertIn("padding='same' with an even dilated kernel", records[0]["reason"])

    def test_a_normalization_after_a_long_product_gets_a_wider_norm_bound(self):
        body = ("class Model(nn.Module):\n    def __init__(self):\n"
                "        super().__init__()\n        self.fc = nn.Linear(K, 64)\n"
                "        self.gn = nn.GroupNorm(4, 64)\n"
                "    def forward(self, x):\n        return self.gn(self.fc(x))\n"
                "def get_inputs():\n    return [torch.rand(8, K)]\n"
                "def get_init_inputs():\n    return []\n")
        long = self.one("K = 2048\n" + body)
        short = self.one("K = 256\n" + body)
        self.assertEqual(long["tolerance"]["norm_rel"], 5e-5)
        self.assertEqual(short["tolerance"]["norm_rel"], 1e-5)

    def test_a_random_op_is_refused_with_its_reason(self):
        path = write_problem(self.folder, "drop",
                             "class Model(nn.Module):\n    def forward(self, x):\n"
                             "        return nn.functional.dropout(x, 0.5, training=True)\n"
                             "def get_inputs():\n    return [torch.rand(64, 128)]\n"
                             "def get_init_inputs():\n    return []\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 2)
        self.assertIn("dropout", records[0]["reason"])

    def test_a_dropout_module_in_training_mode_points_at_eval_which_imports_it(self):
        path = write_problem(self.folder, "drop_module",
                             "class Model(nn.Module):\n    def __init__(self, p):\n"
                             "        super().__init__()\n        self.drop = nn.Dropout(p)\n"
                             "    def forward(self, x):\n        return torch.relu(self.drop(x))\n"
                             "def get_inputs():\n    return [torch.rand(64, 128)]\n"
                             "def get_init_inputs():\n    return [0.2]\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 2)
        self.assertIn("training mode", records[0]["reason"])
        self.assertIn("--eval", records[0]["reason"])
        rc, records, _ = run_import("--eval", path)
        self.assertEqual(rc, 0, records)
        table = manifest(records[0])
        self.assertEqual(table["family"], "elementwise")
        self.assertTrue(table["module"]["eval"])  # the baselines and --verify run it so too

    def test_a_scalar_tensor_made_in_forward_is_the_number_it_holds(self):
        # On the meta device torch.tensor(0.5, device=x.device) has no value; made without a
        # device it is a real CPU tensor: either way the op holds the number.
        path = write_problem(self.folder, "made_scalars",
                             "class Model(nn.Module):\n    def forward(self, x):\n"
                             "        x = torch.min(x, torch.tensor(0.5, device=x.device))\n"
                             "        return torch.max(x, torch.tensor(0.25))\n"
                             "def get_inputs():\n    return [torch.rand(64, 128)]\n"
                             "def get_init_inputs():\n    return []\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 0, records)
        op = manifest(records[0])["params"]["op"]
        self.assertIn("0.5", op)
        self.assertIn("0.25", op)

    def test_a_constructor_that_reads_values_runs_on_the_cpu_then_moves_to_meta(self):
        path = write_problem(self.folder, "reads_values",
                             "class Model(nn.Module):\n    def __init__(self):\n"
                             "        super().__init__()\n"
                             "        self.scale = torch.linspace(0, 1, 5)[2].item()\n"
                             "        self.lin = nn.Linear(64, 32)\n"
                             "    def forward(self, x):\n        return self.lin(x) * self.scale\n"
                             "def get_inputs():\n    return [torch.rand(16, 64)]\n"
                             "def get_init_inputs():\n    return []\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 0, records)
        self.assertIn("0.5", json.dumps(manifest(records[0])))

    def test_a_file_that_does_not_run_says_so(self):
        path = write_problem(self.folder, "broken", "raise ValueError('nope')\n")
        rc, records, _ = run_import(path)
        self.assertEqual(rc, 2)
        self.assertIn("does not run", records[0]["reason"])
        self.assertIn("nope", records[0]["reason"])


class UserCode(unittest.TestCase):
    """FILE.py:NAME with --input and --init: a module and a function of a user's own code."""

    def test_a_module_class_with_inputs_and_init_from_the_command_line(self):
        rc, records, _ = run_import(USER + ":ScaledResidual", "--input", "f32[64,512]",
                                    "--input", "f32[64,512]", "--init", "[512]")
        self.assertEqual(rc, 0, records)
        m = manifest(records[0])
        self.assertEqual(m["family"], "elementwise")
        self.assertEqual(sorted(i["name"] for i in m["inputs"]), ["gain", "skip", "x"])
        self.assertEqual(m["module"]["entry"], "ScaledResidual")
        self.assertEqual(m["module"]["parameters"], {"gain": "gain"})

    def test_a_function_is_imported_too(self):
        rc, records, _ = run_import(USER + ":rms_scale", "--input", "f32[64,512]")
        self.assertEqual(rc, 0, records)
        m = manifest(records[0])
        self.assertEqual((m["family"], m["params"]), ("norm", {"op": "rms", "eps": 1e-6, "dim": 1}))

    def test_a_bad_input_spec_is_a_usage_error(self):
        out = tempfile.mkdtemp()
        done = subprocess.run([sys.executable, TOOL, "--json", "--out", out,
                               USER + ":rms_scale", "--input", "f32(64,512)"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 1)
        self.assertIn("DTYPE[D0,D1,...]", done.stderr)


if __name__ == "__main__":
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"torch is not installed for {sys.executable} (scripts/install-torch.sh): skipped")
        sys.exit(125)
    unittest.main(argv=[sys.argv[0]], verbosity=1)
