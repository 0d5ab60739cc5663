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
import subprocess
import sys
import tempfile
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

    def test_an_experiment_without_sweep_is_refused(self):
        quickstart = os.path.join(SOURCE, "configs/experiments/quickstart.yaml")
        p = self.run_mpi(quickstart, "--output", "results", "--no-plots", expect=None)
        self.assertIn("only the points of a sweep", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.mpi, "results")))


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
