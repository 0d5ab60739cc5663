#!/usr/bin/env python3
"""`cmake --install` gives a working strata: the installed binary, run from another folder, reads a shipped
hardware preset and finds its plot scripts (util::find_data_file) through <prefix>/share/strata, and every
shared library it links from outside the loader's default folders (CUDA's libcudart and cuDNN, NCCL, Open MPI
where they sit elsewhere) is on its run path, so it starts without LD_LIBRARY_PATH or an ld.so.conf entry.

Usage: install_test.py <cmake> <build folder> <strata in the build folder>
"""
import os
import re
import subprocess
import sys
import tempfile

cmake, build, built_strata = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []
LOADER_DEFAULTS = {"/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                   "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}


def run_path(binary):
    """The folders of the binary's DT_RUNPATH (or DT_RPATH), as readelf prints them."""
    dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True).stdout
    found = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.*)\]", dynamic)
    return [d for d in found.group(1).split(":") if d] if found else []


def linked_outside_defaults(binary):
    """The folders, outside the loader's defaults, of the libraries the binary resolves here."""
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    folders = {os.path.dirname(m.group(1)) for m in re.finditer(r"=> (/\S+)", ldd)}
    return sorted(folders - LOADER_DEFAULTS)

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
    installed_path = run_path(strata)
    for folder in linked_outside_defaults(built_strata):
        if folder not in installed_path:
            failures.append(f"the build links a library from {folder}, which is not on the installed run path "
                            f"{installed_path}")
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
