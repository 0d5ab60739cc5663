#!/usr/bin/env python3
"""Command-line tests of the model-sim experiment kind (experiments/model_sim.cc, docs/experiments.md
"model-sim"): its numbers against `strata model sim` for the same model, against the H100 datasheet peak and
against invariants of a single-stream simulation (the step is the sum of its kernels); a what-if sweep of the
GPU's FLOP/s; bad fields reported with file, line and field.

Run by ctest, one test per class (helpers and entry point: cli_common.py):  model_sim_test.py --strata build/experiments/strata --source . ClassName
"""
import csv
import os
import re
import tempfile
import unittest

import cli_common
from cli_common import src, strata

H100_FP16_DENSE = 989.4e12  # FLOP/s, NVIDIA H100 SXM5 datasheet (dense, no sparsity)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_experiment(folder, body):
    path = os.path.join(folder, "e.yaml")
    with open(path, "w") as f:
        f.write("experiment: m\ndescription: model-sim test\nkind: model-sim\n"
                f"hw: {src('configs/hw/dgx-h100.yaml')}\n" + body)
    return path


def cli_step_seconds(*args):
    """The step time `strata model sim` prints, in seconds."""
    p = strata("model", "sim", *args, "--hw", "configs/hw/dgx-h100.yaml")
    assert p.rc == 0, p.err
    m = re.search(r"step time: ([0-9.]+) (us|ms|s)\b", p.out)
    assert m, p.out
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


class ModelSimKind(unittest.TestCase):
    def test_inference_and_training_rows(self):
        with tempfile.TemporaryDirectory() as d:
            exp = write_experiment(d, "dtype: f16\nmodels:\n  - {model: squeezenet, batch: 8}\n"
                                      "  - {model: bert-base, batch: 4, seq: 64, label: bert}\n")
            p = strata("run", "--no-plots", "--output", d, exp)
            self.assertEqual(p.rc, 0, p.err)
            models = rows(os.path.join(d, "m", "models.csv"))
            ops = rows(os.path.join(d, "m", "ops.csv"))
            self.assertEqual([m["model"] for m in models], ["squeezenet batch 8", "bert"])
            for m in models:
                step = float(m["step_s"])
                # One stream, kernels in dependency order: the step is the sum of its kernels' times.
                kernels = sum(float(o["seconds"]) for o in ops if o["model"] == m["model"])
                self.assertAlmostEqual(kernels / step, 1.0, places=5)
                self.assertAlmostEqual(sum(float(o["share"]) for o in ops if o["model"] == m["model"]), 1.0,
                                       places=3)
                self.assertAlmostEqual(float(m["samples_per_s"]) * step / int(m["batch"]), 1.0, places=4)
                achieved = float(m["flops"]) / step
                self.assertAlmostEqual(float(m["achieved_tflops"]) / (achieved / 1e12), 1.0, places=3)
                self.assertAlmostEqual(float(m["peak_fraction"]) / (achieved / H100_FP16_DENSE), 1.0, places=3)
                self.assertEqual(m["fits"], "true")
            # The same numbers as `strata model sim` (printed to 4 significant digits).
            self.assertAlmostEqual(float(models[0]["step_s"]) /
                                   cli_step_seconds("squeezenet", "--batch", "8", "--dtype", "f16"), 1.0, places=3)
            self.assertAlmostEqual(float(models[1]["step_s"]) /
                                   cli_step_seconds("bert-base", "--batch", "4", "--seq", "64", "--dtype", "f16"),
                                   1.0, places=3)

    def test_training_step_costs_more_than_a_forward_pass(self):
        with tempfile.TemporaryDirectory() as d:
            steps = {}
            for mode in ["inference", "training"]:
                exp = write_experiment(d, f"mode: {mode}\nmodels:\n  - {{model: squeezenet, batch: 16}}\n")
                p = strata("run", "--no-plots", "--output", os.path.join(d, mode), exp)
                self.assertEqual(p.rc, 0, p.err)
                steps[mode] = float(rows(os.path.join(d, mode, "m", "models.csv"))[0]["step_s"])
            # Backward is about twice the forward pass (two contractions per forward one), plus the update.
            self.assertGreater(steps["training"] / steps["inference"], 2.0)
            self.assertLess(steps["training"] / steps["inference"], 6.0)

    def test_what_if_faster_gpu(self):
        """Doubling every peak FLOP/s figure: no kernel gets slower, and the step gains at most 2x."""
        with tempfile.TemporaryDirectory() as d:
            exp = write_experiment(d, "dtype: f16\nmodels:\n  - {model: bert-base, batch: 32, seq: 128}\n"
                                      "sweep:\n  scale: {gpu_flops: [1, 2]}\n")
            p = strata("run", "--no-plots", "--output", d, exp)
            self.assertEqual(p.rc, 0, p.err)
            one, two = (float(rows(os.path.join(d, "m", "points", str(i), "models.csv"))[0]["step_s"])
                        for i in (0, 1))
            self.assertGreater(one / two, 1.05)
            self.assertLessEqual(one / two, 2.0 + 1e-9)
            ops = [{o["op"]: float(o["seconds"]) for o in rows(os.path.join(d, "m", "points", str(i), "ops.csv"))}
                   for i in (0, 1)]
            for op, seconds in ops[0].items():
                self.assertLessEqual(ops[1][op], seconds * (1 + 1e-9), op)

    def test_bad_fields(self):
        with tempfile.TemporaryDirectory() as d:
            cases = [
                ("mode: train\nmodels:\n  - {model: squeezenet}\n", "5:7: mode: expected inference or training, got 'train'"),
                ("models:\n  - {model: squeezenet, batchsize: 2}\n", "6:25: models[0].batchsize: unknown field 'batchsize'"),
                ("models:\n  - {model: no-such-model}\n", "6:13: models[0].model: unknown model 'no-such-model'"),
                ("dtype: i8\nmodels:\n  - {model: squeezenet}\n", "5:8: dtype: expected f32, f16, bf16 or f64, got 'i8'"),
                ("optimizer: sgd\nmodels:\n  - {model: squeezenet}\n", "5:12: optimizer: an optimizer applies to mode: training only"),
                ("models: []\n", "5:9: models: expected at least one model"),
                ("models:\n  - {model: missing.onnx}\n", "6:13: models[0].model: "),
            ]
            for body, expected in cases:
                p = strata("run", "--check", write_experiment(d, body))
                self.assertEqual(p.rc, 2, (body, p.err))
                self.assertIn("e.yaml:" + expected, p.err, body)
                self.assertNotIn("internal error", p.err)


if __name__ == "__main__":
    cli_common.main()  # --strata/--source, then unittest on this module
