#!/usr/bin/env python3
"""Golden-output tests of `strata run`: experiment results, interrupted runs and output paths refused before any
work (helpers and entry point: cli_common.py).
"""
import csv
import io
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import cli_common
from cli_common import read_text, shipped_experiments, sizes_of, src, strata, write_text, yaml_scalar


# --- run ---------------------------------------------------------------------------------------------------------

SMALL_SWEEP = """experiment: {name}
description: a small sweep for the CLI tests
kind: collective-sweep
op: allreduce
sizes: 1MiB:16MiB:4
algorithms: [auto, ring]
systems:
  - hw: {hw}
  - hw: {hw}
    nodes: 2
    label: two nodes
"""
LONG_SIZES = "sizes: 1KiB:1GiB:1.02"


class RunExperiment(unittest.TestCase):
    def write(self, d, name, text):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_fidelity_curves_cover_every_preset(self):
        # docs/fidelity.md §3.8 and issue 13 promise curves from 1 MiB to 16 GiB for every preset: every file of
        # configs/hw/ is a system of configs/experiments/fidelity_curves.yaml, and its run has a row per system
        # and size (8 sizes: 1 MiB x 4^k up to 16 GiB), each with nccl-tests' bus bandwidth relation.
        presets = sorted(f[:-5] for f in os.listdir(src("configs/hw")) if f.endswith(".yaml"))
        text = read_text(src("configs/experiments/fidelity_curves.yaml"))
        named = sorted(set(re.findall(r"hw: \.\./hw/([a-z0-9-]+)\.yaml", text)))
        self.assertEqual(named, presets)
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", src("configs/experiments/fidelity_curves.yaml"), "--output", d, "--no-plots")
            self.assertEqual(r.rc, 0, r)
            rows = list(csv.DictReader(io.StringIO(read_text(os.path.join(d, "fidelity_curves", "collectives.csv")))))
        systems = len(re.findall(r"^  - hw:", text, re.M))
        sizes = sizes_of(2**20, 16 * 2**30, 4)
        self.assertEqual(len(sizes), 8)
        self.assertEqual(len(rows), systems * len(sizes))
        self.assertEqual(sorted({r["system"].split(" x")[0] for r in rows}), presets)
        for row in rows:
            n = int(row["gpus"])
            self.assertAlmostEqual(float(row["busbw_GBps"]), float(row["algbw_GBps"]) * 2 * (n - 1) / n,
                                   delta=2e-3 + 1e-3 * float(row["busbw_GBps"]))

    def test_small_sweep_results(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "hw"))
            import shutil
            shutil.copy(src("configs/hw/dgx-a100.yaml"), os.path.join(d, "hw", "a.yaml"))
            os.makedirs(os.path.join(d, "exp"))
            exp = self.write(os.path.join(d, "exp"), "s.yaml", SMALL_SWEEP.format(name="small", hw="../hw/a.yaml"))
            # Run from an unrelated directory: the hw path is relative to the experiment file.
            r = strata("run", exp, "--output", os.path.join(d, "out"), "--no-plots", cwd="/")
            self.assertEqual(r.rc, 0, r)
            out = os.path.join(d, "out", "small")
            self.assertEqual(sorted(os.listdir(out)), ["collectives.csv", "summary.md"])
            self.assertEqual(os.listdir(os.path.join(d, "out")), ["small"])  # no staging folder left behind
            rows = list(csv.DictReader(io.StringIO(read_text(os.path.join(out, "collectives.csv")))))
            sizes = sizes_of(2**20, 16 * 2**20, 4)
            self.assertEqual(len(rows), 2 * 2 * len(sizes))  # systems x algorithms x sizes
            self.assertEqual(list(rows[0].keys()),
                             ["system", "nodes", "gpus", "op", "algorithm_requested", "algorithm", "protocol", "bytes",
                              "time_us", "algbw_GBps", "busbw_GBps"])
            for row in rows:
                n = int(row["gpus"])
                self.assertEqual(n, 8 * int(row["nodes"]))
                self.assertAlmostEqual(float(row["algbw_GBps"]), float(row["bytes"]) / float(row["time_us"]) / 1e3,
                                       delta=1e-3 + 1e-3 * float(row["algbw_GBps"]))
                self.assertAlmostEqual(float(row["busbw_GBps"]), float(row["algbw_GBps"]) * 2 * (n - 1) / n,
                                       delta=2e-3 + 1e-3 * float(row["busbw_GBps"]))
            self.assertEqual({row["system"] for row in rows}, {"dgx-a100 x1", "two nodes"})
            summary = read_text(os.path.join(out, "summary.md"))
            self.assertTrue(summary.startswith("# small\n"))
            self.assertEqual(summary.count("\n| dgx-a100 x1 |") + summary.count("\n| two nodes |"), 4)
            # A second run replaces the set as a whole.
            r = strata("run", exp, "--output", os.path.join(d, "out"), "--no-plots")
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(os.listdir(os.path.join(d, "out")), ["small"])

    def test_every_shipped_experiment_is_valid(self):
        files = shipped_experiments()
        self.assertIn(src("configs/experiments/repro/p2.yaml"), files)  # the folders are walked too
        for f in files:
            with tempfile.TemporaryDirectory() as d:
                r = strata("run", "--check", f, "--output", d, cwd=d)
                self.assertEqual(r.rc, 0, r)
                self.assertIn(f"valid {yaml_scalar(f, 'kind')} experiment", r.out)
                self.assertEqual(os.listdir(d), [])  # --check writes nothing

    def test_directory_instead_of_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", d, "--output", os.path.join(d, "out"))
            self.assertEqual(r.rc, 2, r)
            self.assertIn(f"{d}: is a directory", r.err)

    def test_shipped_quickstart_from_another_directory(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", src("configs/experiments/quickstart.yaml"), "--output", d, "--no-plots", cwd=d)
            self.assertEqual(r.rc, 0, r)
            self.assertTrue(os.path.isfile(os.path.join(d, "quickstart", "collectives.csv")))

    def test_name_with_quotes_and_a_figure(self):
        with tempfile.TemporaryDirectory() as d:
            text = SMALL_SWEEP.format(name="it's \"quoted\"", hw=src("configs/hw/dgx-a100.yaml"))
            exp = self.write(d, "q.yaml", text.replace("name", "name"))
            r = strata("run", exp, "--output", d)
            self.assertEqual(r.rc, 0, r)
            out = os.path.join(d, "it's \"quoted\"")
            self.assertTrue(os.path.isfile(os.path.join(out, "summary.md")), r)
            summary = read_text(os.path.join(out, "summary.md"))
            if "could not be drawn" not in summary:  # matplotlib present: the PNG is in the set
                with open(os.path.join(out, "busbw.png"), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_parallel_sweep_writes_the_set_and_reports_progress(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", src("configs/experiments/parallel_small.yaml"), "--output", d, cwd=d)
            self.assertEqual(r.rc, 0, r)
            out = os.path.join(d, "parallel_small")
            summary = read_text(os.path.join(out, "summary.md"))
            files = ["plans.csv", "summary.md"]
            if "could not be drawn" not in summary:  # matplotlib present: the three figures are in the set
                files += ["breakdown.png", "memory.png", "step_time.png"]
                for png in ("breakdown.png", "memory.png", "step_time.png"):
                    with open(os.path.join(out, png), "rb") as f:
                        self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertEqual(sorted(os.listdir(out)), sorted(files))
            self.assertEqual(os.listdir(d), ["parallel_small"])
            # Progress on stderr: one header per size, one line per family; nothing but the result on stdout.
            self.assertIn("[1/2] 1 nodes (8 GPUs), global batch 16\n", r.err)
            self.assertIn("[2/2] 2 nodes (16 GPUs), global batch 16\n", r.err)
            self.assertEqual(r.out, f"results written to {out}/\n")
            rows = list(csv.DictReader(io.StringIO(read_text(os.path.join(out, "plans.csv")))))
            self.assertEqual(len(rows), 2 * 5)  # node counts x (3 built-in + 2 explicit families)
            for row in rows:
                if row["status"] == "ok":  # tokens/s = global batch x sequence / step time
                    self.assertAlmostEqual(float(row["tokens_per_s"]), 16 * 1024 / float(row["step_s"]), delta=0.1)

    def check_error(self, text, pattern, files=None):
        with tempfile.TemporaryDirectory() as d:
            for name, content in (files or {}).items():
                self.write(d, name, content)
            exp = self.write(d, "e.yaml", text)
            r = strata("run", exp, "--output", os.path.join(d, "out"), "--no-plots")
            self.assertEqual(r.rc, 2, r)
            self.assertRegex(r.err, "^strata: error: " + re.escape(exp) + pattern, r)
            self.assertFalse(os.path.exists(os.path.join(d, "out", "bad")), "nothing written on a bad file")

    def test_errors_name_file_line_and_field(self):
        hw = src("configs/hw/dgx-a100.yaml")
        good = SMALL_SWEEP.format(name="bad", hw=hw)
        self.check_error(good.replace(hw, "no/such.yaml"), r":8:9: systems\[0\]\.hw: cannot open 'no/such.yaml'")
        self.check_error(good.replace("kind: collective-sweep", "kind: sweep"),
                         r":3:7: kind: unknown experiment kind 'sweep' \(expected one of: collective-sweep, ")
        self.check_error(good + "sizez: 3\n", r":\d+:1: sizez: unknown field")
        self.check_error(good.replace("sizes: 1MiB:16MiB:4", "sizes: 1MiB:16:4"), r":5:8: sizes: .*'1MiB:16:4'")
        self.check_error(good.replace("experiment: bad", "experiment: ."), r":1:13: experiment: expected a plain name")
        self.check_error(good.split("systems:")[0] + "systems: []\n", r":7:10: systems: expected at least one system")
        self.check_error(good.replace("op: allreduce", "op: allsum"), r":4:5: op: unknown collective 'allsum'")
        self.check_error(good.replace("[auto, ring]", "[auto, rung]"), r":6:20: algorithms\[1\]: unknown algorithm 'rung'")
        self.check_error(good.replace("nodes: 2", "nodes: 0"), r":10:12: systems\[1\]\.nodes: ")
        self.check_error(good.replace("experiment: bad", "experiment: ../bad"), r":1:13: experiment: expected a plain name")
        # The optimizers' minimum gain (docs/subst.md), a percentage.
        subst = (f"experiment: bad\ndescription: x\nkind: subst-optimizers\nhw: {hw}\n"
                 f"rules: {src('configs/subst/taso_shipped_verified.rules')}\nmodels:\n  - {{name: squeezenet}}\n")
        self.check_error(subst + "min_gain: 101\n", r":8:11: min_gain: expected a percentage in 0\.\.100")
        self.check_error(subst + "min_gain: -1\n", r":8:11: min_gain: expected a percentage in 0\.\.100")
        # An error inside the hardware file it names: both places are reported.
        self.check_error(good.replace(hw, "broken.yaml"),
                         r":8:9: systems\[0\]\.hw: in the hardware description it names: .*broken\.yaml:\d+:\d+: ",
                         files={"broken.yaml": "name: x\nnode:\n  gpus: 8\n"})


class RunInterrupted(unittest.TestCase):
    """Issue 11: a killed `strata run` leaves the previous result set as it was and no staging folder behind.
    SIGINT and SIGTERM remove the staging folder at once (exit status 130 / 143, one line on stderr); SIGKILL
    cannot be handled, so the next run of the same experiment removes the folder, but never one that a live
    run holds. A long run (a sweep over many sizes) is killed once its staging folder exists."""

    NAME = "killed"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.out = os.path.join(self.d, "out")
        hw = src("configs/hw/dgx-h100.yaml")
        self.short = write_text(os.path.join(self.d, "short.yaml"), SMALL_SWEEP.format(name=self.NAME, hw=hw))
        # The same experiment name, thousands of sizes on 2 and 16 nodes: runs for many seconds.
        long_text = SMALL_SWEEP.format(name=self.NAME, hw=hw).replace("sizes: 1MiB:16MiB:4", LONG_SIZES)
        self.long = write_text(os.path.join(self.d, "long.yaml"), long_text.replace("nodes: 2", "nodes: 16"))

    def tearDown(self):
        self.tmp.cleanup()

    def complete_run(self):
        r = strata("run", self.short, "--output", self.out, "--no-plots")
        self.assertEqual(r.rc, 0, r)
        return r

    def result_set(self):
        folder = os.path.join(self.out, self.NAME)
        return {f: read_text(os.path.join(folder, f)) for f in sorted(os.listdir(folder))}

    def staging_folders(self):
        return [f for f in os.listdir(self.out) if f.startswith(f".{self.NAME}.partial-")]

    def start_long_run(self):
        """Starts the long run (SIGINT not ignored, whatever ctest's parent did) and returns once its staging
        folder exists; returns the process and the folder's name."""
        proc = subprocess.Popen([cli_common.STRATA, "run", self.long, "--output", self.out, "--no-plots"], cwd=self.d,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        before = set(self.staging_folders()) if os.path.isdir(self.out) else set()
        while time.monotonic() < deadline:
            new = set(self.staging_folders()) - before if os.path.isdir(self.out) else set()
            if new:
                return proc, new.pop()
            if proc.poll() is not None:
                self.fail(f"the long run ended (rc {proc.returncode}) before its staging folder was seen: "
                          f"{proc.communicate()}")
            time.sleep(0.01)
        proc.kill()
        self.fail("no staging folder within 120 s")

    def check_handled_signal(self, sig, status):
        self.complete_run()
        before = self.result_set()
        proc, _ = self.start_long_run()
        time.sleep(0.2)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, status, err)
        dest = os.path.join(self.out, self.NAME)
        # Progress lines ("[1/4] ...") may come first; the interrupt is one line, the last.
        self.assertTrue(err.endswith("\n"), err)
        self.assertEqual(err.splitlines()[-1], f"strata: interrupted by {sig.name}; '{dest}' was left as it was")
        self.assertEqual([line for line in err.splitlines() if not re.match(r"\[\d+/\d+\] ", line)],
                         [err.splitlines()[-1]])
        self.assertEqual(out, "")
        self.assertEqual(os.listdir(self.out), [self.NAME])  # no staging folder left
        self.assertEqual(self.result_set(), before)

    def test_sigint(self):
        self.check_handled_signal(signal.SIGINT, 130)

    def test_sigterm(self):
        self.check_handled_signal(signal.SIGTERM, 143)

    def test_sigint_before_any_result_leaves_nothing(self):
        os.makedirs(self.out)
        proc, _ = self.start_long_run()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130)
        self.assertEqual(os.listdir(self.out), [])

    def test_sigkill_then_the_next_run_cleans_up(self):
        self.complete_run()
        before = self.result_set()
        proc, staging = self.start_long_run()
        proc.kill()
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        self.assertEqual(sorted(os.listdir(self.out)), sorted([self.NAME, staging]))  # SIGKILL cannot be handled
        self.assertEqual(self.result_set(), before)
        r = self.complete_run()
        self.assertIn(f"note: removed '{os.path.join(self.out, staging)}', left by an interrupted run", r.err)
        self.assertEqual(os.listdir(self.out), [self.NAME])

    def test_a_live_runs_staging_folder_is_kept(self):
        proc, staging = self.start_long_run()
        try:
            self.complete_run()  # a second run of the same experiment while the long one is going on
            self.assertEqual(sorted(os.listdir(self.out)), sorted([self.NAME, staging]))
            self.assertIsNone(proc.poll())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 143)
        self.assertEqual(os.listdir(self.out), [self.NAME])


class OutputPathsRefusedFirst(unittest.TestCase):
    """Issue 11 re-check: an output path that is a folder, or in a folder that does not exist, is refused with
    the path named before any work is done (optimize, subst verify and subst generate used to run the whole
    search or proof first and fail only when writing)."""

    def check(self, args, bad):
        r = strata(*args)
        self.assertEqual(r.rc, 2, r)
        self.assertTrue(r.err.startswith(f"strata: error: {bad}: cannot write: "), r)
        self.assertEqual(r.out, "", r)  # nothing was computed or printed
        self.assertEqual(r.err.count("\n"), 1, r)  # no progress lines either

    def test_each_output_option(self):
        hw = src("configs/hw/dgx-a100.yaml")
        rules = src("configs/subst/taso_shipped_verified.rules")
        with tempfile.TemporaryDirectory() as d:
            missing = os.path.join(d, "no", "such.json")
            for bad in (d, missing):
                self.check(["optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "-o", bad], bad)
                self.check(["optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "--listing", bad], bad)
                self.check(["subst", "verify", rules, "--no-z3", "--json", bad], bad)
                self.check(["subst", "verify", rules, "--no-z3", "-o", bad], bad)
                self.check(["subst", "generate", "--ops", "relu", "--max-ops", "1", "-o", bad], bad)
            self.assertEqual(os.listdir(d), [])  # no stray <path>.tmp


if __name__ == "__main__":
    cli_common.main()
