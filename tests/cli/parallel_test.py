#!/usr/bin/env python3
"""Golden-output tests of `strata sim step` and `strata parallelize` (issue 12). Expected values are computed
here independently of strata: model FLOPs from Narayanan et al. SC'21's formula 72 B s L h^2 (1 + s/6h + V/12hL)
(GPT shapes), MFU from NVIDIA's H100 SXM datasheet peak (989.4 TFLOP/s dense bf16), tokens per second from the
batch, parameter counts from the GPT architecture (12 h^2 + 13 h per layer), ZeRO's 2 + 2 + 12 bytes per
parameter (Rajbhandari et al. SC'20) and the GPU count of the hardware YAML. Errors are checked for what they
must name.

Run by ctest, one test per class:  parallel_test.py --strata build/experiments/strata --source . ClassName
"""
import json
import os
import unittest

import cli_common
from cli_common import strata

H100_BF16 = 989.4e12
GPT = "transformer:layers=4,hidden=1024,heads=16,vocab=32000,seq=1024"
L, H, V, S = 4, 1024, 32000, 1024


def gpt_params():
    return L * (12 * H * H + 13 * H) + (V + S) * H + 2 * H  # tied head, learned positions, final LayerNorm


def step_json(*extra, nodes="1"):
    r = strata("sim", "step", "--model", GPT, "--hw", "configs/hw/dgx-h100.yaml", "--nodes", nodes, "--format",
               "json", *extra)
    return r, (json.loads(r.out) if r.rc == 0 else None)


class ParallelStep(unittest.TestCase):
    def test_data_parallel_fields_against_formulas(self):
        batch = 32
        r, j = step_json("--dp", "8", "--micro-batch", "2", "--global-batch", str(batch))
        self.assertEqual(r.rc, 0, r)
        for field in ("step_seconds", "mfu", "peak_memory_bytes", "fits", "tokens_per_second", "breakdown_seconds"):
            self.assertIn(field, j)
        flops = 72 * batch * S * L * H * H * (1 + S / (6 * H) + V / (12 * H * L))
        self.assertAlmostEqual(j["model_flops_per_step"] / flops, 1.0, places=9)
        self.assertAlmostEqual(j["mfu"], flops / (j["step_seconds"] * 8 * H100_BF16), places=6)
        self.assertAlmostEqual(j["tokens_per_second"], batch * S / j["step_seconds"], delta=1e-6 * j["tokens_per_second"])
        self.assertEqual(j["micro_batches"], batch // (8 * 2))
        # Plain data parallelism keeps 2 B weights + 2 B gradients + 12 B Adam state per parameter.
        mem = j["memory"]
        self.assertAlmostEqual(mem["weights_bytes"], 2 * gpt_params(), delta=1)
        self.assertAlmostEqual(mem["optimizer_bytes"], 12 * gpt_params(), delta=1)
        self.assertTrue(j["fits"])
        self.assertLess(j["mfu"], 1.0)

    def test_zero_shards_optimizer_state(self):
        _, z0 = step_json("--dp", "8", "--global-batch", "8")
        _, z1 = step_json("--dp", "8", "--global-batch", "8", "--zero", "1")
        _, z3 = step_json("--dp", "8", "--global-batch", "8", "--zero", "3")
        self.assertAlmostEqual(z1["memory"]["optimizer_bytes"], z0["memory"]["optimizer_bytes"] / 8, delta=1)
        self.assertAlmostEqual(z3["memory"]["weights_bytes"], z0["memory"]["weights_bytes"] / 8, delta=1)
        # ZeRO-2 shards gradients too but communicates like ZeRO-1 (reduce-scatter + all-gather): same step.
        _, z2 = step_json("--dp", "8", "--global-batch", "8", "--zero", "2")
        self.assertAlmostEqual(z2["step_seconds"], z1["step_seconds"], delta=1e-12)
        self.assertLess(z2["memory"]["gradients_bytes"], z1["memory"]["gradients_bytes"])

    def test_text_output_and_trace(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "step.json")
            r = strata("sim", "step", "--model", GPT, "--hw", "configs/hw/dgx-h100.yaml", "--nodes", "2", "--tp",
                       "4", "--pp", "2", "--dp", "2", "--micro-batch", "1", "--global-batch", "8",
                       "--sequence-parallel", "--trace", trace)
            self.assertEqual(r.rc, 0, r)
            for word in ("step", "MFU", "tokens/s", "memory", "breakdown", "pipeline bubble", "exposed DP"):
                self.assertIn(word, r.out)
            events = json.load(open(trace))["traceEvents"]
            self.assertTrue(any(e.get("name", "").startswith("tp ") for e in events))

    def test_out_of_memory_is_reported(self):
        # GPT-3 175B on one node with plain data parallelism: 16 B x 175 G parameters per GPU.
        r = strata("sim", "step", "--model", "gpt3-175b", "--hw", "configs/hw/dgx-h100.yaml", "--dp", "8",
                   "--global-batch", "8", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        j = json.loads(r.out)
        self.assertFalse(j["fits"])
        self.assertGreater(j["peak_memory_bytes"], 16 * 174e9)

    def test_errors_name_what_does_not_divide(self):
        cases = [
            (["--tp", "3", "--dp", "1"], "tp x pp x dp x cp = 3 x 1 x 1 x 1 = 3 GPUs, but the system has 8"),
            (["--tp", "8", "--dp", "1", "--global-batch", "8"], None),
            (["--dp", "8", "--global-batch", "12"], "global batch (12) must be a positive multiple of dp x micro-batch"),
            (["--dp", "8", "--recompute", "some"], "--recompute: expected none, selective or full"),
            (["--dp", "8", "--zero", "4"], "--zero"),
            (["--dp", "4", "--pp", "2", "--virtual-stages", "2", "--global-batch", "12"],
             "needs micro-batches (3) to be a multiple of pipeline stages (2)"),
        ]
        for args, message in cases:
            extra = list(args)
            if "--global-batch" not in extra:
                extra += ["--global-batch", "8"]
            r, _ = step_json(*extra)
            if message is None:
                self.assertEqual(r.rc, 0, r)
                continue
            self.assertEqual(r.rc, 2, r)
            self.assertIn(message, r.err)
            self.assertEqual(r.out, "")
        r = strata("sim", "step", "--model", "resnet50", "--hw", "configs/hw/dgx-h100.yaml", "--global-batch", "8")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("is not a transformer", r.err)


class Parallelize(unittest.TestCase):
    def test_exhaustive_ranks_plans(self):
        r = strata("parallelize", "--model", GPT, "--hw", "configs/hw/dgx-h100.yaml", "--global-batch", "16",
                   "--top", "5", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        j = json.loads(r.out)
        plans = j["plans"]
        self.assertEqual(len(plans), 5)
        steps = [p["step_seconds"] for p in plans]
        self.assertEqual(steps, sorted(steps))
        for p in plans:
            self.assertTrue(p["fits"])
            self.assertEqual(p["tp"] * p["pp"] * p["dp"] * p["cp"], 8)
            self.assertEqual(16 % (p["dp"] * p["micro_batch"]), 0)
        # The search's space holds the data-parallel plans: its best is at least as fast.
        self.assertLessEqual(steps[0], j["data_parallel"]["step_seconds"] * (1 + 1e-9))
        c = j["counts"]
        self.assertGreaterEqual(c["enumerated"], c["invalid"] + c["out_of_memory"])
        self.assertEqual(c["plans"], c["pruned"] + c["simulated"])

    def test_mcmc_on_a_zoo_cnn(self):
        r = strata("parallelize", "--model", "squeezenet", "--hw", "configs/hw/dgx-a100.yaml", "--global-batch",
                   "64", "--search", "mcmc", "--proposals", "500", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        j = json.loads(r.out)
        self.assertEqual(j["gpus"], 8)
        self.assertLessEqual(j["best"]["step_seconds"], j["data_parallel"]["step_seconds"] * (1 + 1e-9))
        self.assertIn("conv2d", j["best"]["listing"])
        again = json.loads(strata("parallelize", "--model", "squeezenet", "--hw", "configs/hw/dgx-a100.yaml",
                                  "--global-batch", "64", "--search", "mcmc", "--proposals", "500", "--format",
                                  "json").out)
        self.assertEqual(again["best"], j["best"])  # same seed, same plan

    def test_bad_search(self):
        r = strata("parallelize", "--model", GPT, "--hw", "configs/hw/dgx-h100.yaml", "--global-batch", "16",
                   "--search", "annealing")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--search: expected exhaustive or mcmc", r.err)


if __name__ == "__main__":
    cli_common.main()  # --strata/--source, then unittest on this module
