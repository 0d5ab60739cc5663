#!/usr/bin/env python3
"""Checks of behaviour that issue 10 defined and later changes implemented (the *AfterFix classes), and the rank
and channel limits of issue 11 (helpers and entry point: cli_common.py).
"""
import os
import re
import tempfile
import unittest

import cli_common
from cli_common import (PUBLISHED_PARAMS, TRUE_AND_FALSE_RULES, parse_collective_table, sizes_of, src, strata,
                        write_text)


# --- after the fixes of other issue-10 changes -------------------------------------------------------------------

class SizesAfterFix(unittest.TestCase):
    """Issue 10 defect 2: plain integers are bytes; K/M/G are powers of 1024 as in nccl-tests."""

    def table_sizes(self, sizes):
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--sizes", sizes)
        self.assertEqual(r.rc, 0, r)
        return [row["size"] for row in parse_collective_table(r.out)[0]]

    def test_plain_bytes_and_kmg(self):
        self.assertEqual(self.table_sizes("1048576:1073741824"), sizes_of(2**20, 2**30, 2))
        self.assertEqual(self.table_sizes("1k:4k"), [1024, 2048, 4096])
        self.assertEqual(self.table_sizes("1M:1G:32"), sizes_of(2**20, 2**30, 32))
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--sizes", "1Q")
        self.assertEqual(r.rc, 2, r)
        self.assertRegex(r.err, r"K.*M.*G")

    def test_help_states_the_rule(self):
        self.assertRegex(strata("sim", "collective", "--help").out, r"(?i)1024")


class TunerAfterFix(unittest.TestCase):
    """Issue 10 defect 4: the tuner's simulated time is within 10% of the best algorithm's it chooses from:
    auto among NCCL's algorithms (ring, tree, nvls, nvls-tree), best among all, strata's own direct and
    hierarchical schedules included. Since auto is NCCL's own choice (docs/fidelity.md §6.8) it may be slower
    where NCCL's rating and the simulation disagree: NCCL_RULE lists those cases with what NCCL runs."""

    # 2 x DGX A100, 256 MiB: NCCL 2.21 rates the ring (Simple) at 2,930 us and the tree's best protocol,
    # LL128, at 3,404 us: its tree graph's 8 channels x 20 GB/s per-channel LL128 ceiling (tuning.cc
    # perChMaxTreeLL128Bws, Ampere) bound the tree, and the simulator does not charge that ceiling (§5).
    # 2 x DGX H100, 1 MiB: NCCL rates NVLS-Tree (Simple) at 56.9 us and its tree (LL128) at 60.4 us; strata
    # simulates the tree at 67.4 us since its fill crosses each stage at that stage's pace (§6.9), and
    # NVLS-Tree at 78.0 us.
    NCCL_RULE = {("configs/hw/dgx-a100.yaml", 2, "256MiB", None): "ring",
                 ("configs/hw/dgx-h100.yaml", 2, "1MiB", None): "nvls-tree"}

    NCCL = ["ring", "tree", "nvls", "nvls-tree"]
    ALL = NCCL + ["direct", "hierarchical"]

    def times(self, hw, nodes, size, group=None):
        args = ["sim", "collective", "--hw", src(hw), "--nodes", str(nodes), "--sizes", size]
        if group:
            args += ["--group", group]
        times = {}
        for algo in ["auto", "best"] + self.ALL:
            r = strata(*args, "--algo", algo)
            if r.rc == 0:
                table = parse_collective_table(r.out)[0][0]
                times[algo] = (table["time_us"], r.out)
        return times

    def test_cases_of_the_issue(self):
        for hw, nodes, size, group in [("configs/hw/dgx1-v100.yaml", 1, "1MiB", None),
                                       ("configs/hw/dgx-a100.yaml", 2, "512KiB", None),
                                       ("configs/hw/dgx-h100.yaml", 2, "1MiB", None),
                                       ("configs/hw/dgx-a100.yaml", 2, "256MiB", None),
                                       ("configs/hw/dgx-h100.yaml", 1, "64MiB", "0-3")]:
            t = self.times(hw, nodes, size, group)
            case = (hw, nodes, size, group)
            best_nccl = min(t[a][0] for a in self.NCCL if a in t)
            best_all = min(t[a][0] for a in self.ALL if a in t)
            if case in self.NCCL_RULE:
                self.assertRegex(t["auto"][1], r"\b%s\b" % self.NCCL_RULE[case], case)
                self.assertEqual(t["auto"][0], t[self.NCCL_RULE[case]][0], case)
            else:
                self.assertLessEqual(t["auto"][0], 1.10 * best_nccl, case)
            self.assertLessEqual(t["best"][0], 1.10 * best_all, case)
            # auto never names one of strata's own schedules for these all-reduces.
            self.assertNotRegex(t["auto"][1], r"\b(direct|hierarchical)\b", case)


class TrainDtypesAfterFix(unittest.TestCase):
    """Issue 10 defect 1: every zoo model trains at f32, f16 and bf16 (here the failing BERT-base)."""

    def test_bert_trains_at_every_dtype(self):
        for dtype in ["f32", "f16", "bf16"]:
            r = strata("model", "sim", "bert-base", "--hw", src("configs/hw/dgx-a100.yaml"), "--train", "--dtype", dtype)
            self.assertEqual(r.rc, 0, r)
            self.assertIn("training step", r.out)


class MixedPrecisionMemoryAfterFix(unittest.TestCase):
    """Issue 10 defect 8: mixed-precision Adam keeps f16 weights + f32 master weights + two f32 moments."""

    def test_resnet50_f16_adam(self):
        n = PUBLISHED_PARAMS["resnet50"]
        r = strata("model", "sim", "resnet50", "--hw", src("configs/hw/dgx-a100.yaml"), "--train", "--dtype", "f16")
        self.assertEqual(r.rc, 0, r)
        m = re.search(r"parameters ([0-9.]+) MiB \+ optimizer state ([0-9.]+) MiB", r.out)
        self.assertAlmostEqual(float(m.group(1)) + float(m.group(2)), n * (2 + 4 + 8) / 2**20, delta=0.02)


class SubstVerifyAfterFix(unittest.TestCase):
    """Issue 10 defect 10: `subst verify` fails (non-zero exit) when a rule is false."""

    def test_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tf.rules")
            write_text(path, TRUE_AND_FALSE_RULES)
            r = strata("subst", "verify", path)
            self.assertNotIn(r.rc, (0, 2), r)
            write_text(path, TRUE_AND_FALSE_RULES.split("rule wrong")[0])
            r = strata("subst", "verify", path)
            self.assertEqual(r.rc, 0, r)


class OptimizeCostAfterFix(unittest.TestCase):
    """Issue 10 defect 6: the written graph, simulated by `model sim`, costs what `optimize` predicted."""

    def test_written_graph_costs_the_prediction(self):
        hw = src("configs/hw/dgx-a100.yaml")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "sq.onnx")
            r = strata("optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "-o", out)
            self.assertEqual(r.rc, 0, r)
            after = float(re.search(r"predicted time after:\s+([0-9.]+) ms", r.out).group(1))
            sim = strata("model", "sim", out, "--hw", hw, "--dtype", "f32")
            self.assertEqual(sim.rc, 0, sim)
            step = float(re.search(r"step time: ([0-9.]+) us", sim.out).group(1)) / 1e3
            self.assertAlmostEqual(step, after, delta=1e-4 + 1e-3 * after)


class OptimizeCheckAfterFix(unittest.TestCase):
    """Issue 10 defect 7: the equality check prints a verdict (pass/fail, max relative error, tolerance)."""

    def test_verdict(self):
        r = strata("optimize", "--model", "squeezenet", "--hw", src("configs/hw/dgx-a100.yaml"))
        self.assertEqual(r.rc, 0, r)
        check = next(l for l in r.out.splitlines() if l.startswith("check"))
        self.assertRegex(check, r"(?i)\bpass\b")
        self.assertRegex(check, r"(?i)relative error")
        self.assertRegex(check, r"(?i)tolerance")


class CollectiveDetailsAfterFix(unittest.TestCase):
    """Issue 10 defect 10: strict rank lists, 1-GPU groups, sendrecv without --group, no directories created by
    --trace, no table header before an error, aligned columns at >= 10,000 us."""

    hw = property(lambda self: src("configs/hw/dgx-a100.yaml"))

    def test_strict_group(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0,1x,2y", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--group", r.err)
        self.assertEqual(r.out, "")  # no header before the error

    def test_one_gpu_group_moves_no_bytes(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0", "--sizes", "1GiB")
        self.assertEqual(r.rc, 0, r)
        row = parse_collective_table(r.out)[0][0]
        self.assertEqual(row["busbw"], 0.0)  # nccl-tests: busbw factor 2(n-1)/n = 0 for one rank
        # Nothing crosses a link; at most a local copy, which cannot beat the GPU's memory bandwidth (hw list).
        hbm = float(re.search(r"^  a100-sxm4-80gb .* ([0-9.]+) GB/s$", strata("hw", "list").out, re.M).group(1))
        self.assertLessEqual(row["algbw"], hbm, row["line"])

    def test_sendrecv_without_group(self):
        r = strata("sim", "collective", "--hw", self.hw, "--op", "sendrecv", "--sizes", "1MiB")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(parse_collective_table(r.out)[0]), 1)

    def test_trace_into_missing_directory(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "missing", "x.json")
            r = strata("sim", "collective", "--hw", self.hw, "--sizes", "1MiB", "--trace", path)
            self.assertEqual(r.rc, 2, r)
            self.assertFalse(os.path.exists(os.path.join(d, "missing")))

    def test_nodes_zero_message_is_short(self):
        r = strata("sim", "collective", "--hw", self.hw, "--nodes", "0")
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("--nodes", r.err)
        self.assertLess(len(r.err), 300, r)

    def test_columns_stay_aligned_for_long_times(self):
        r = strata("sim", "collective", "--hw", self.hw, "--op", "allreduce", "--algo", "ring", "--sizes", "1GiB:8GiB:8")
        self.assertEqual(r.rc, 0, r)
        rows, header, _ = parse_collective_table(r.out)
        self.assertGreaterEqual(max(row["time_us"] for row in rows), 10000)
        names = next(l for l in header if "busbw" in l)
        for col in ["time", "algbw", "busbw"]:
            end = names.index(col) + len(col)
            for row in rows:
                value = row["line"][:end].split()[-1]
                self.assertTrue(row["line"][end:end + 1] in (" ", ""), (col, row["line"]))
                float(value)

class RankAndChannelLimits(unittest.TestCase):
    """Issue 11: inputs that grew without bound are refused up front with the limit. --group expanded a range
    into a list before checking it against the system (0-2147483647 looped past INT_MAX); --channels 1000000
    built a million rings."""

    hw = property(lambda self: src("configs/hw/dgx-a100.yaml"))  # 8 GPUs

    def test_group_range_beyond_the_system(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0-2147483647", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--group: rank 2147483647 is outside 0..7", r.err)
        self.assertEqual(r.out, "")

    def test_group_backwards_or_repeated(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "5-3", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("runs backwards", r.err)
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0-3,2", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("rank 2 is listed twice", r.err)

    def test_channels_limit(self):
        r = strata("sim", "collective", "--hw", self.hw, "--channels", "1000000", "--sizes", "1MiB")
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("--channels", r.err)
        self.assertIn("0..32", r.err)
        r = strata("sim", "collective", "--hw", self.hw, "--channels", "32", "--sizes", "1MiB")
        self.assertEqual(r.rc, 0, r)


if __name__ == "__main__":
    cli_common.main()
