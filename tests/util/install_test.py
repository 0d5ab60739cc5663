#!/usr/bin/env python3
"""`cmake --install` gives a working strata: the installed binary, run from another folder, reads a shipped
hardware preset and finds its plot scripts (util::find_data_file) through <prefix>/share/strata.

Usage: install_test.py <cmake> <build folder>
"""
import os
import subprocess
import sys
import tempfile

cmake, build = sys.argv[1], sys.argv[2]
failures = []
with tempfile.TemporaryDirectory() as tmp:
    prefix = os.path.join(tmp, "prefix")
    subprocess.run([cmake, "--install", build, "--prefix", prefix], check=True, capture_output=True)
    strata = os.path.join(prefix, "bin", "strata")
    share = os.path.join(prefix, "share", "strata")
    for data in ("configs/hw/dgx-a100.yaml", "configs/experiments/quickstart.yaml",
                 "experiments/plots/collective_sweep.py"):
        if not os.path.isfile(os.path.join(share, data)):
            failures.append(f"{data} is not installed under {share}")
    work = os.path.join(tmp, "elsewhere")
    os.makedirs(work)
    hw = os.path.join(share, "configs/hw/dgx-a100.yaml")
    p = subprocess.run([strata, "hw", "show", hw], cwd=work, capture_output=True, text=True)
    if p.returncode != 0 or "= 8 GPUs" not in p.stdout:
        failures.append(f"installed `strata hw show` failed: exit {p.returncode}, {p.stderr[:300]!r}")
    experiment = os.path.join(work, "tiny.yaml")
    with open(experiment, "w") as f:
        f.write(f"experiment: tiny\nkind: collective-sweep\nop: allreduce\nsizes: 1MiB:2MiB\n"
                f"algorithms: [ring]\nsystems:\n  - hw: {hw}\n")
    # Plotting may fail for lack of matplotlib (a warning); a plot script that cannot be found is an error.
    p = subprocess.run([strata, "run", experiment, "--output", os.path.join(work, "results")], cwd=work,
                       capture_output=True, text=True)
    if p.returncode != 0 or "not found" in p.stderr:
        failures.append(f"installed `strata run` failed: exit {p.returncode}, {p.stderr[:400]!r}")
for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "the installed strata works")
sys.exit(1 if failures else 0)
