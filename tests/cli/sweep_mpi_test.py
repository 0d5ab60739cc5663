#!/usr/bin/env python3
"""Sweeps on a cluster (experiments/sweep_mpi.h, docs/experiments.md "Sweeps on a cluster (MPI)"):
`mpirun -np 2 strata run` into one folder and the single-process run into another must give the same
sweep.csv, sweep.json and summary.md byte for byte; a re-run computes no point, and a re-run after a point
went missing from the store (what a failed rank leaves) computes exactly that point.

Exit status 77 (ctest: skipped) when mpirun is not found or strata was built without MPI.
Run by ctest:  sweep_mpi_test.py --strata build/experiments/strata --source . --mpi ON
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

STRATA = ""
SOURCE = ""
MPIRUN = None
# What Open MPI needs to start ranks as root in a container, on one host, without a fast fabric: the same as
# tests/validate_e2e/emulated_cluster_test.py and validate/measure.cc set.
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl": "self,tcp",
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_mpi_yield_when_idle": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_mca_base_component_disable_dlclose": "1",
}
if "ASAN_OPTIONS" in os.environ:  # the sanitized build: MPI's frames must resolve for its leak suppressions
    MPI_ENV["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":fast_unwind_on_malloc=0"
OUTPUTS = ("sweep.csv", "sweep.json", "summary.md")

# Five points, four distinct: the 1x point appears twice and shares one stored result, as in one process.
SWEEP = """experiment: mpi_whatif
description: All-reduce on 2x DGX H100 with the NDR NICs scaled.
kind: collective-sweep
op: allreduce
sizes: 64MiB:1GiB:4
dtype: fp32
algorithms: [ring]
systems:
  - hw: {hw}
    nodes: 2
sweep:
  scale:
    nic_bandwidth: [1, 2, 4, 1, 8]
"""
POINTS, DISTINCT = 5, 4
# Sixteen points that take a while each (0.1-0.2 s on one core): enough for every rank to get some, and for a
# rank to be killed half-way.
BIG = """experiment: mpi_big
kind: collective-sweep
op: allreduce
sizes: 1MiB:16GiB:2
dtype: fp32
algorithms: [ring, tree]
systems:
  - hw: {hw}
    nodes: 16
sweep:
  scale:
    nic_bandwidth: [1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5]
"""
BIG_POINTS = 16


def read(path):
    with open(path, "rb") as f:
        return f.read()


class MpiSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.file = os.path.join(self.tmp.name, "mpi_whatif.yaml")
        with open(self.file, "w") as f:
            f.write(SWEEP.format(hw=os.path.join(SOURCE, "configs/hw/dgx-h100.yaml")))
        # Each run in its own folder with the same relative --output, so that no path differs.
        self.single = os.path.join(self.tmp.name, "single")
        self.mpi = os.path.join(self.tmp.name, "mpi")
        os.makedirs(self.single)
        os.makedirs(self.mpi)

    def tearDown(self):
        self.tmp.cleanup()

    def run_single(self):
        p = subprocess.run([STRATA, "run", self.file, "--output", "results", "--no-plots"], cwd=self.single,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def run_mpi(self, *args, expect=0, ranks=2):
        cmd = [MPIRUN, "-np", str(ranks), "--oversubscribe", "--allow-run-as-root", STRATA, "run", *args]
        p = subprocess.run(cmd, cwd=self.mpi, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, **MPI_ENV))
        if expect is None:
            self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        else:
            self.assertEqual(p.returncode, expect, p.stdout + p.stderr)
        return p

    def assert_same_outputs(self):
        for name in OUTPUTS:
            a = read(os.path.join(self.single, "results", "mpi_whatif", name))
            b = read(os.path.join(self.mpi, "results", "mpi_whatif", name))
            self.assertEqual(a, b, f"{name} differs between the single-process and the 2-rank run")

    def computed_lines(self, stderr):
        return re.findall(r"point (\d+) \([^)]*\): computed in [0-9.]+ s on rank (\d+)", stderr)

    def test_two_ranks_write_what_one_process_writes(self):
        self.run_single()
        first = self.run_mpi(self.file, "--output", "results", "--no-plots")
        self.assertIn(f"{POINTS} points, {DISTINCT} to compute on 2 MPI ranks", first.stderr)
        computed = self.computed_lines(first.stderr)
        # Every distinct point computed exactly once (the repeated 1x point, index 3, from the store).
        self.assertEqual(sorted(int(i) for i, _ in computed), [0, 1, 2, 4], first.stderr)
        self.assertTrue({r for _, r in computed} <= {"0", "1"}, first.stderr)
        self.assertEqual(first.stdout.count("results written to"), 1, first.stdout)  # rank 0 only
        self.assertIn(f"({DISTINCT} computed by this run, 1 from", read(
            os.path.join(self.mpi, "results", "mpi_whatif", "summary.md")).decode())
        self.assert_same_outputs()

        # A re-run computes nothing; its outputs equal a single-process re-run's.
        again = self.run_mpi(self.file, "--output", "results", "--no-plots")
        self.assertEqual(self.computed_lines(again.stderr), [], again.stderr)
        self.assertEqual(again.stderr.count("from the store"), POINTS, again.stderr)
        self.assertIn(f"{POINTS} points, 0 to compute", again.stderr)
        self.run_single()
        self.assert_same_outputs()

        # What a failed rank leaves: a point absent from the store. The next run computes only that point.
        store = os.path.join(self.mpi, "results", ".store", "mpi_whatif")
        keys = sorted(os.listdir(store))
        self.assertEqual(len(keys), DISTINCT, keys)
        shutil.rmtree(os.path.join(store, keys[0]))
        repaired = self.run_mpi(self.file, "--output", "results", "--no-plots")
        self.assertEqual(len(self.computed_lines(repaired.stderr)), 1, repaired.stderr)
        self.assertEqual(sorted(os.listdir(store)), keys)

    def test_one_rank_is_the_single_process_run(self):
        self.run_single()
        p = self.run_mpi(self.file, "--output", "results", "--no-plots", ranks=1)
        self.assertEqual(p.stderr.count("computed in"), DISTINCT, p.stderr)
        self.assertNotIn("on rank", p.stderr)
        self.assert_same_outputs()

    def test_more_ranks_than_points(self):
        self.run_single()
        p = self.run_mpi(self.file, "--output", "results", "--no-plots", ranks=6)
        self.assertEqual(len(self.computed_lines(p.stderr)), DISTINCT, p.stderr)
        self.assert_same_outputs()

    def write_big(self):
        path = os.path.join(self.tmp.name, "mpi_big.yaml")
        with open(path, "w") as f:
            f.write(BIG.format(hw=os.path.join(SOURCE, "configs/hw/dgx-h100.yaml")))
        return path

    def test_every_rank_computes_and_the_outputs_stay_the_same(self):
        big = self.write_big()
        p = subprocess.run([STRATA, "run", big, "--output", "results", "--no-plots"], cwd=self.single,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.run_mpi(big, "--output", "results", "--no-plots")
        computed = self.computed_lines(p.stderr)
        self.assertEqual(sorted(int(i) for i, _ in computed), list(range(BIG_POINTS)), p.stderr)
        self.assertEqual({r for _, r in computed}, {"0", "1"}, "both ranks compute points:\n" + p.stderr)
        for name in OUTPUTS:
            self.assertEqual(read(os.path.join(self.single, "results", "mpi_big", name)),
                             read(os.path.join(self.mpi, "results", "mpi_big", name)), name)

    def test_a_killed_rank_leaves_complete_points_and_the_rerun_computes_the_rest(self):
        big = self.write_big()
        cmd = [MPIRUN, "-np", "2", "--oversubscribe", "--allow-run-as-root", STRATA, "run", big, "--output",
               "results", "--no-plots"]
        store = os.path.join(self.mpi, "results", ".store", "mpi_big")
        job = subprocess.Popen(cmd, cwd=self.mpi, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=dict(os.environ, **MPI_ENV))
        try:
            victim = None
            deadline = time.time() + 120
            # Rank 1 is killed (SIGKILL: no clean-up) once two points are in the store.
            while time.time() < deadline and job.poll() is None:
                done = [k for k in os.listdir(store)] if os.path.isdir(store) else []
                victim = victim or rank_pid(1)
                if victim and len([k for k in done if not k.startswith(".")]) >= 2:
                    os.kill(victim, signal.SIGKILL)
                    break
                time.sleep(0.02)
            job.wait(timeout=120)
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
        if victim is None or job.returncode == 0:
            self.skipTest("the job finished before a rank could be killed")
        self.assertFalse(os.path.exists(os.path.join(self.mpi, "results", "mpi_big")), "no outputs")
        kept = sorted(k for k in os.listdir(store) if not k.startswith("."))
        self.assertGreaterEqual(len(kept), 2)
        for key in kept:  # complete or absent
            self.assertTrue(os.path.isfile(os.path.join(store, key, "point.json")), key)
        again = self.run_mpi(big, "--output", "results", "--no-plots")
        self.assertEqual(len(self.computed_lines(again.stderr)), BIG_POINTS - len(kept), again.stderr)
        self.assertEqual(again.stderr.count("from the store"), len(kept), again.stderr)
        p = subprocess.run([STRATA, "run", big, "--output", "results", "--no-plots"], cwd=self.single,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in ("sweep.csv", "sweep.json"):  # summary.md counts the points computed by each run
            self.assertEqual(read(os.path.join(self.single, "results", "mpi_big", name)),
                             read(os.path.join(self.mpi, "results", "mpi_big", name)), name)

    def test_a_point_that_fails_stops_every_rank_and_the_rerun_computes_the_rest(self):
        big = self.write_big()
        dry = subprocess.run([STRATA, "run", "--dry-run", big, "--output", "results"], cwd=self.mpi,
                             capture_output=True, text=True, timeout=600)
        key = [l.split()[2] for l in dry.stdout.splitlines()[2:] if l.split()[0] == "5"][0]
        store = os.path.join(self.mpi, "results", ".store", "mpi_big")
        os.makedirs(store)
        with open(os.path.join(store, key), "w") as f:  # point 5 cannot be put in place: it fails on its rank
            f.write("not a folder\n")
        p = self.run_mpi(big, "--output", "results", "--no-plots", expect=2)  # the failing rank's status
        self.assertRegex(p.stderr, r"the sweep stopped: rank [01] failed on point 5: --output: '[^']*" + key +
                         r"' exists and is not a folder\. The points finished before are kept in the store")
        self.assertFalse(os.path.exists(os.path.join(self.mpi, "results", "mpi_big")), "no outputs")
        kept = [k for k in os.listdir(store) if k != key and not k.startswith(".")]
        for k in kept:
            self.assertTrue(os.path.isfile(os.path.join(store, k, "point.json")), k)
        os.remove(os.path.join(store, key))
        again = self.run_mpi(big, "--output", "results", "--no-plots")
        self.assertEqual(len(self.computed_lines(again.stderr)), BIG_POINTS - len(kept), again.stderr)

    def test_an_experiment_without_sweep_is_refused(self):
        quickstart = os.path.join(SOURCE, "configs/experiments/quickstart.yaml")
        p = self.run_mpi(quickstart, "--output", "results", "--no-plots", expect=None)
        self.assertIn("only the points of a sweep", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.mpi, "results")))


def rank_pid(rank):
    """The pid of the strata process that is MPI rank `rank` (its environment says so), or None."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.realpath(argv0.decode(errors="replace")) == STRATA and \
                f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and b"OMPI_COMM_WORLD_SIZE=2" in env:
            return int(pid)
    return None


def main():
    global STRATA, SOURCE, MPIRUN
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--mpi", default="ON", help="ON when strata was built with MPI (CMake's MPI_CXX_FOUND)")
    args, rest = ap.parse_known_args()
    STRATA, SOURCE = os.path.abspath(args.strata), os.path.abspath(args.source)
    MPIRUN = shutil.which("mpirun")
    if MPIRUN is None:
        print("skipped: mpirun not found (install openmpi-bin)")
        return 77
    if args.mpi.upper() not in ("ON", "1", "TRUE", "YES"):
        print("skipped: strata was built without MPI")
        return 77
    result = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
