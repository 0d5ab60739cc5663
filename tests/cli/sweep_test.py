#!/usr/bin/env python3
"""Command-line tests of experiment sweeps (experiments/sweep.h, docs/experiments.md "Sweeps and what-if
studies"): the shipped what-if example against the NIC figures of its hardware file, the result store seen from
`strata run --dry-run` and from a second run, byte-identical CSVs, Ctrl-C keeping finished points, and bad
specs reported with file, line and field.

Run by ctest, one test per class:  sweep_test.py --strata build/experiments/strata --source . ClassName
"""
import csv
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import cli_common
from cli_common import read_text, src, strata, write_text

# InfiniBand NDR: 400 Gb/s per port = 50e9 bytes/s per direction (the ib-ndr link of configs/hw/dgx-h100.yaml).
NDR_BYTES_PER_S = 400e9 / 8


def tidy_rows(folder):
    with open(os.path.join(folder, "sweep.csv"), newline="") as f:
        return list(csv.DictReader(f))


EXAMPLE = "configs/experiments/whatif_nic.yaml"


class WhatIfNic(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def run_example(self, out=None):
        r = strata("run", src(EXAMPLE), "--output", out or self.out, "--no-plots")
        self.assertEqual(r.rc, 0, r.err)
        return r

    def test_dry_run_then_run_then_resume(self):
        r = strata("run", "--dry-run", src(EXAMPLE), "--output", self.out)
        self.assertEqual(r.rc, 0, r.err)
        self.assertIn("mode grid, 3 points: 0 in the store, 3 to compute", r.out)
        lines = [l.split() for l in r.out.splitlines()[2:]]
        self.assertEqual([(l[0], l[1], l[3]) for l in lines], [("0", "missing", "1"), ("1", "missing", "2"),
                                                                  ("2", "missing", "4")])
        self.assertTrue(all(re.fullmatch(r"[0-9a-f]{32}", l[2]) for l in lines), lines)
        self.assertFalse(os.path.exists(self.out), "a dry run writes nothing")

        first = self.run_example()
        self.assertEqual(first.err.count("computed in"), 3, first.err)
        r = strata("run", "--dry-run", src(EXAMPLE), "--output", self.out)
        self.assertIn("3 points: 3 in the store, 0 to compute", r.out)
        self.assertEqual(r.out.count(" stored "), 3, r.out)
        second = self.run_example()
        self.assertEqual(second.err.count("from the store"), 3, second.err)
        self.assertNotIn("computed in", second.err)

    def test_nic_bandwidth_is_scaled_and_helps(self):
        self.run_example()
        res = os.path.join(self.out, "whatif_nic")
        for i, factor in enumerate([1, 2, 4]):
            hw = read_text(os.path.join(res, "points", str(i), "effective", "hw0-dgx-h100.yaml"))
            m = re.search(r"nics:\s*\n\s*count: 8\s*\n\s*link:\s*\n\s*kind: ib-ndr\s*\n\s*bandwidth: (\S+) B/s", hw)
            self.assertTrue(m, hw)
            self.assertEqual(float(m.group(1)), NDR_BYTES_PER_S * factor)
            exp = read_text(os.path.join(res, "points", str(i), "effective", "experiment.yaml"))
            self.assertNotIn("sweep:", exp)
            self.assertIn("sizes: 64MiB:1GiB:4", exp)
        rows = tidy_rows(res)
        self.assertEqual(list(rows[0].keys())[:4], ["scale.nic_bandwidth", "point", "table", "row"])
        busbw = {}
        for row in rows:
            if row["metric"] == "busbw_GBps":
                busbw.setdefault(float(row["scale.nic_bandwidth"]), []).append(float(row["value"]))
        self.assertEqual(sorted(busbw), [1.0, 2.0, 4.0])
        self.assertEqual([len(v) for v in busbw.values()], [3, 3, 3])  # 64 MiB, 256 MiB, 1 GiB
        # Every ring of a ring all-reduce over two nodes crosses from one node to the other once in each
        # direction, each ring on a NIC of its own: summed over rings, the bus bandwidth at 1x cannot exceed
        # the node's 8 NDR ports in one direction. Twice the NIC bandwidth makes every size faster; beyond
        # that NVLink may bind, but faster NICs never make a size slower.
        self.assertLessEqual(max(busbw[1.0]), 8 * NDR_BYTES_PER_S / 1e9)
        for k in range(3):
            self.assertLess(busbw[1.0][k], busbw[2.0][k])
            self.assertLessEqual(busbw[2.0][k], busbw[4.0][k])
        meta = json.load(open(os.path.join(res, "sweep.json")))
        version = strata("--version").out.strip()
        self.assertEqual(meta["strata_version"], version)
        self.assertEqual([p["values"]["scale.nic_bandwidth"] for p in meta["points"]], ["1", "2", "4"])
        self.assertEqual(meta["plot"]["metric"], "busbw_GBps")
        # `plot: {row: all}`: a series per message size, named by the one column that tells the rows apart
        # and keeps its value through the points, with the same numbers as sweep.csv.
        series = meta["plot"]["series"]
        self.assertEqual([s["label"] for s in series], [f"bytes={b}" for b in (64 << 20, 256 << 20, 1 << 30)])
        for k, s in enumerate(series):
            self.assertEqual(s["values"], [busbw[f][k] for f in (1.0, 2.0, 4.0)])
        summary = read_text(os.path.join(res, "summary.md"))
        self.assertIn("busbw_GBps of collectives.csv (every row):", summary)
        self.assertIn("| point | scale.nic_bandwidth | bytes=67108864 | bytes=268435456 | bytes=1073741824 |",
                      summary)

    def test_same_config_gives_byte_identical_csv(self):
        self.run_example()
        other = os.path.join(self.tmp.name, "other")
        self.run_example(other)
        self.assertEqual(read_text(os.path.join(self.out, "whatif_nic", "sweep.csv")),
                         read_text(os.path.join(other, "whatif_nic", "sweep.csv")))

    def test_figure(self):
        if subprocess.run(["/usr/bin/python3", "-c", "import matplotlib"], capture_output=True).returncode != 0:
            self.skipTest("matplotlib is not installed")
        r = strata("run", src(EXAMPLE), "--output", self.out)
        self.assertEqual(r.rc, 0, r.err)
        png = os.path.join(self.out, "whatif_nic", "sweep.png")
        self.assertTrue(os.path.getsize(png) > 1000)


LONG = """experiment: long
kind: collective-sweep
op: allreduce
sizes: 1KiB:1GiB:1.02
algorithms: [ring]
systems:
  - hw: {hw}
    nodes: 16
sweep:
  scale:
    nic_bandwidth: [1, 2, 3, 4, 5, 6, 7, 8]
"""


class SweepInterrupted(unittest.TestCase):
    def test_ctrl_c_keeps_finished_points(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "long.yaml")
            with open(path, "w") as f:
                f.write(LONG.format(hw=src("configs/hw/dgx-h100.yaml")))
            out = os.path.join(d, "out")
            proc = subprocess.Popen([cli_common.STRATA, "run", path, "--output", out, "--no-plots"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
            deadline = time.monotonic() + 300
            for line in proc.stderr:
                if line.startswith("[sweep 1/8]"):
                    break
                self.assertLess(time.monotonic(), deadline)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 130, err)
            store = os.path.join(out, ".store", "long")
            kept = sorted(os.listdir(store))
            self.assertTrue(all(re.fullmatch(r"[0-9a-f]{32}", k) for k in kept), kept)  # no staging folder
            self.assertGreaterEqual(len(kept), 1)
            self.assertLess(len(kept), 8)
            for k in kept:
                self.assertTrue(os.path.isfile(os.path.join(store, k, "point.json")))
                self.assertTrue(os.path.isfile(os.path.join(store, k, "collectives.csv")))
            self.assertFalse(os.path.exists(os.path.join(out, "long")), "no results set from an interrupted sweep")
            r = strata("run", "--dry-run", path, "--output", out)
            self.assertIn(f"8 points: {len(kept)} in the store, {8 - len(kept)} to compute", r.out)


class SweepModelKeys(unittest.TestCase):
    """A model written as a mapping of transformer keys: a sweep varies one key (`model.layers`)."""

    def test_layers_axis(self):
        with tempfile.TemporaryDirectory() as d:
            path = write_text(os.path.join(d, "m.yaml"), f"""experiment: m
kind: parallel-sweep
model: {{layers: 24, hidden: 2048, heads: 16, vocab: 32000, seq: 1024}}
hw: {src("configs/hw/dgx-h100.yaml")}
nodes: [1]
global_batch: 16
families: [megatron]
sweep:
  axes: {{model.layers: [12, 24, 48]}}
  plot: {{metric: step_s}}
""")
            r = strata("run", path, "--output", d, "--no-plots")
            self.assertEqual(r.rc, 0, r.err)
            steps = {}
            for row in tidy_rows(os.path.join(d, "m")):
                if row["metric"] == "step_s":
                    steps[int(row["model.layers"])] = float(row["value"])
            # Megatron's plan for 8 GPUs keeps every layer on every pipeline-free GPU: the layers' compute and
            # TP all-reduces grow linearly with the layer count, embedding and head do not, so doubling the
            # layers costs a little less than twice the step.
            for few, many in ((12, 24), (24, 48)):
                self.assertGreater(steps[many] / steps[few], 1.8)
                self.assertLess(steps[many] / steps[few], 2.0)
            # The summary names the model by its keys, with the point's layer count.
            self.assertIn("layers=48", read_text(os.path.join(d, "m", "points", "2", "summary.md")))
            bad = write_text(os.path.join(d, "b.yaml"), read_text(path).replace("layers: 24", "layerz: 24").split("sweep:")[0])
            r = strata("run", "--check", bad)
            self.assertEqual(r.rc, 2)
            self.assertIn("b.yaml:3:8: model: transformer spec: unknown key 'layerz'", r.err)


class SweepErrors(unittest.TestCase):
    def check(self, sweep, expected, hw=None):
        """Runs, checks and dry-runs a file with `sweep` in place of LONG's: exit status 2, the message, nothing
        written. `expected` may name the hardware file as {hw}."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.yaml")
            hw = hw(d) if hw else src("configs/hw/dgx-h100.yaml")
            with open(path, "w") as f:
                f.write(LONG.format(hw=hw).split("sweep:")[0] + sweep)
            before = sorted(os.listdir(d))
            for args in (["run", path, "--output", d], ["run", "--check", path], ["run", "--dry-run", path]):
                r = strata(*args)
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(r.err, f"strata: error: {path}:{expected.format(hw=hw)}\n")
            self.assertEqual(sorted(os.listdir(d)), before)

    def test_zip_lengths(self):
        self.check("sweep:\n  mode: zip\n  axes:\n    op: [allreduce, allgather]\n    systems.0.nodes: [1]\n",
                   "13:22: sweep.axes.systems.0.nodes: zip pairs the i-th values of every axis: expected 2 values "
                   "like 'op', got 1")

    def test_unknown_path(self):
        self.check("sweep:\n  axes:\n    hw.node.nics.speed.x: [1]\n",
                   "11:27: sweep.axes.hw.node.nics.speed.x: in the hardware description "
                   f"{src('configs/hw/dgx-h100.yaml')}: 'node.nics.speed' does not exist "
                   "(fields there: count, link) (sweep point 0: hw.node.nics.speed.x=1)")

    def test_factor_not_a_number(self):
        self.check("sweep:\n  scale: {nic_bandwidth: [1, x]}\n",
                   "10:30: sweep.scale.nic_bandwidth[1]: expected a scale factor: a number > 0")

    def test_scale_without_such_figure(self):
        def one_node_without_nics(d):
            text = read_text(src("configs/hw/dgx-h100.yaml"))
            text = re.sub(r"\n  nics:.*", "", text).replace("network: {wiring: rail-optimized}", "")
            return write_text(os.path.join(d, "no-nics.yaml"), text)
        self.check("sweep:\n  axes: {systems.0.nodes: [1]}\n  scale: {nic_bandwidth: [2]}\n",
                   "11:26: sweep.scale.nic_bandwidth: {hw}: node.nics: the system has no NICs, so scale "
                   "nic_bandwidth has nothing to scale (sweep point 0: systems.0.nodes=1, scale.nic_bandwidth=2)",
                   hw=one_node_without_nics)


if __name__ == "__main__":
    cli_common.main()  # --strata/--source, then unittest on this module
