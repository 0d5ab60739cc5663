#!/usr/bin/env python3
"""The GPU backend through the command line (docs/gpu.md).

Usage: cli_cuda_test.py <strata binary> <built with CUDA: 1|0> unavailable|gpu   (run from the source root)

Whether this machine has a GPU is decided independently of strata: `nvidia-smi -L` lists one.

unavailable  (no GPU here; otherwise skipped, exit 77): `validate profile --device cuda`, `validate graphs
             --device cuda` and `validate collectives --backend nccl` fail with exit status 2 and the clear
             reason, and write no file: "no CUDA device (cudaGetDeviceCount: ...)" when strata was built with
             CUDA, "strata was built without CUDA" when not. Unknown devices and backends are named with the
             choices. `validate calibrate-cost --device cuda` and a `gpu-validation` experiment fail the same
             way; calibrate-cost refuses --device cpu with a GPU system and --device cuda with host-cpu;
             `validate ring-ll128` refuses LL128 steps that are not whole 9600 B, `validate tree-chunks` fewer
             than 8 chunks and `validate ring-slices`, `ring-ll128`, `nvls-steps` and `tree-chunks` report
             the missing GPU without writing a file; `validate net-slices`,
             `net-ll128`, `net-chunks` and `net-chunks-ll128` refuse malformed --hosts, counts and sizes, and a
             node without NICs, before they start mpirun.
gpu          (a GPU here; otherwise skipped, exit 77): `validate profile --device cuda` writes a profile that
             `model sim --profile` reads back, predicting exactly its sum of node medians with every kernel
             timed from it; `validate collectives --backend nccl` over the node's GPUs (at most 8) reports 0
             wrong elements at every size; `validate calibrate-cost --device cuda --quick` writes parameters
             for the system's GPU, every operator's own fit no worse than the priors in mean |log error| (the fit
             starts from them and keeps the best), and a `gpu-validation` experiment with them reports
             every distinct operator of squeezenet measured, most on the GPU's libraries; `--env` settings
             reach the NCCL ranks (named in the table's header, results still right); with 2+ GPUs
             `validate ring-slices` writes a system file whose node.fabric.nccl_ring `hw show` prints.
"""
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

STRATA, BUILT, MODE = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
failures = []


def run(*args, timeout=600):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def gpus():
    if not shutil.which("nvidia-smi"):
        return 0
    p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return sum(line.startswith("GPU ") for line in p.stdout.splitlines()) if p.returncode == 0 else 0


def unavailable():
    reason = "no CUDA device (cudaGetDeviceCount: " if BUILT else "strata was built without CUDA"
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "p.json")
        for cmd in (["validate", "profile", "--model", "squeezenet", "--device", "cuda", "-o", out_file],
                    ["validate", "graphs", "--model", "squeezenet", "--device", "cuda", "-o", out_file]):
            rc, out, err = run(*cmd)
            prefix = f"strata: error: {cmd[0]} {cmd[1]} --device cuda: {reason}"
            if rc != 2 or prefix not in err or os.path.exists(out_file):
                failures.append(f"{' '.join(cmd[:2])}: expected exit 2 with {prefix!r}, no file; got {rc}, {err!r}")
        rc, out, err = run("validate", "collectives", "--backend", "nccl", "--np", "2", "--hw",
                           "configs/hw/dgx-h100.yaml", "--sizes", "1MiB:1MiB", "-o", out_file)
        if rc != 2 or f"--backend nccl: {reason}" not in err or os.path.exists(out_file):
            failures.append(f"collectives --backend nccl: expected exit 2 with {reason!r}; got {rc}, {err!r}")
        rc, out, err = run("validate", "calibrate-cost", "--device", "cuda", "--hw", "configs/hw/dgx-h100.yaml",
                           "-o", out_file)
        prefix = f"validate calibrate-cost --device cuda: {reason}"
        if rc != 2 or prefix not in err or os.path.exists(out_file):
            failures.append(f"calibrate-cost --device cuda: expected exit 2 with {prefix!r}; got {rc}, {err!r}")
        exp = os.path.join(tmp, "grid.yaml")
        with open(exp, "w") as f:
            f.write(f"experiment: g\nkind: gpu-validation\nhw: {os.path.abspath('configs/hw/dgx-h100.yaml')}\n"
                    "models: [{model: squeezenet}]\n")
        rc, out, err = run("run", exp, "--output", os.path.join(tmp, "results"))
        if rc != 2 or reason not in err or os.path.exists(os.path.join(tmp, "results", "g")):
            failures.append(f"gpu-validation run: expected exit 2 with {reason!r}, no results; got {rc}, {err!r}")
    for device, hw, want in (("cpu", "configs/hw/dgx-a100.yaml", "is priced as the device 'host-cpu'"),
                             ("cuda", "configs/validate/host-cpu.yaml", "measures the GPU: give a system")):
        rc, out, err = run("validate", "calibrate-cost", "--device", device, "--hw", hw, "-o", "/tmp/never.json")
        # Without a GPU the missing device is reported first; the system check applies where one exists.
        if rc != 2 or (want not in err and not (device == "cuda" and reason in err)):
            failures.append(f"calibrate-cost --device {device} --hw {hw}: expected exit 2 with {want!r}; got {rc}, {err!r}")
    rc, out, err = run("validate", "profile", "--model", "squeezenet", "--device", "tpu", "-o", "/tmp/x.json")
    if rc != 2 or "--device 'tpu': expected one of cpu, cuda" not in err:
        failures.append(f"--device tpu: expected exit 2 naming cpu and cuda; got {rc}, {err!r}")
    with tempfile.TemporaryDirectory() as tmp:
        out_file = os.path.join(tmp, "ring.yaml")
        rc, out, err = run("validate", "ring-slices", "--np", "8", "--hw", "configs/hw/dgx-a100.yaml", "--output",
                           out_file)
        want = f"validate ring-slices runs NCCL on this machine's GPUs: {reason}"
        if rc != 2 or want not in err or os.path.exists(out_file):
            failures.append(f"ring-slices: expected exit 2 with {want!r}, no file; got {rc}, {err!r}")
        rc, out, err = run("validate", "ring-ll128", "--np", "8", "--hw", "configs/hw/dgx-a100.yaml", "--output",
                           out_file)
        want = f"validate ring-ll128 runs NCCL on this machine's GPUs: {reason}"
        if rc != 2 or want not in err or os.path.exists(out_file):
            failures.append(f"ring-ll128: expected exit 2 with {want!r}, no file; got {rc}, {err!r}")
        rc, out, err = run("validate", "nvls-steps", "--np", "8", "--hw", "configs/hw/dgx-h100.yaml", "--output",
                           out_file)
        want = f"validate nvls-steps runs NCCL on this machine's GPUs: {reason}"
        if rc != 2 or want not in err or os.path.exists(out_file):
            failures.append(f"nvls-steps: expected exit 2 with {want!r}, no file; got {rc}, {err!r}")
        rc, out, err = run("validate", "tree-chunks", "--np", "8", "--hw", "configs/hw/dgx-a100.yaml", "--output",
                           out_file)
        want = f"validate tree-chunks runs NCCL on this machine's GPUs: {reason}"
        if rc != 2 or want not in err or os.path.exists(out_file):
            failures.append(f"tree-chunks: expected exit 2 with {want!r}, no file; got {rc}, {err!r}")
    rc, out, err = run("validate", "tree-chunks", "--np", "8", "--hw", "configs/hw/dgx-a100.yaml", "--lengths", "4,8",
                       "--output", "/tmp/never.yaml")
    if rc != 2 or "--chunks / --lengths: chunk counts must be at least 8 and increasing" not in err:
        failures.append(f"tree-chunks --lengths 4,8: expected exit 2 asking for 8 chunks or more; got {rc}, {err!r}")
    rc, out, err = run("validate", "nvls-steps", "--np", "8", "--hw", "configs/hw/dgx-h100.yaml", "--steps", "8,16",
                       "--output", "/tmp/never.yaml")
    if rc != 2 or "--chunks / --steps: step counts must be at least 64 and increasing" not in err:
        failures.append(f"nvls-steps --steps 8,16: expected exit 2 asking for 64 steps or more; got {rc}, {err!r}")
    for args, want in ((["--np", "4"], "--np 4: expected 8, every GPU of a node of configs/hw/dgx-a100.yaml"),
                       (["--np", "8", "--slices", "5000"],
                        "--slices / --loops: a slice of 5000 B: expected a multiple of 4 KiB"),
                       (["--np", "8", "--loops", "4,2"], "--loops '4,2': expected increasing counts")):
        rc, out, err = run("validate", "ring-slices", "--hw", "configs/hw/dgx-a100.yaml", "--output", "/tmp/never.yaml",
                           *args)
        if rc != 2 or want not in err:
            failures.append(f"ring-slices {' '.join(args)}: expected exit 2 with {want!r}; got {rc}, {err!r}")
    rc, out, err = run("validate", "ring-ll128", "--hw", "configs/hw/dgx-a100.yaml", "--output", "/tmp/never.yaml",
                       "--np", "8", "--steps", "65536")
    want = "--steps / --loops: an LL128 step of 65536 B: expected a multiple of 9600 B up to 576000 B"
    if rc != 2 or want not in err:
        failures.append(f"ring-ll128 --steps 65536: expected exit 2 with {want!r}; got {rc}, {err!r}")
    # net-slices and net-chunks check their hosts, counts, sizes and the node's NICs before they start anything.
    with tempfile.TemporaryDirectory() as tmp:
        no_nics = os.path.join(tmp, "no-nics.yaml")
        with open("configs/hw/dgx-h100.yaml") as f:
            text = f.read()
        with open(no_nics, "w") as f:
            f.write(text.replace("  nics: {count: 8, link: ib-ndr}\n", "").replace("network: {wiring: rail-optimized}\n", ""))
        for command, counts, sizes, too_big in (("net-slices", "--loops", "--slices", "128MiB:128MiB"),
                                                ("net-ll128", "--loops", "--steps", "585600:585600"),
                                                ("net-chunks", "--lengths", "--chunks", "8MiB:8MiB"),
                                                ("net-chunks-ll128", "--lengths", "--chunks", "585600:585600")):
            for args, want in ((["--hosts", "node1"], "--hosts 'node1': expected two different host names"),
                               (["--hosts", "node1:8,node2:8"],
                                "--hosts 'node1:8,node2:8': expected two different host"),
                               (["--hosts", "node1,node1"], "--hosts 'node1,node1': expected two different host names"),
                               (["--hosts", "node1,node2", counts, "4"], f"{counts}: expected at least two counts"),
                               (["--hosts", "node1,node2", sizes, too_big], f"{sizes} / {counts}: ")):
                rc, out, err = run("validate", command, "--hw", "configs/hw/dgx-h100.yaml", "--output",
                                   os.path.join(tmp, "net.yaml"), *args)
                if rc != 2 or want not in err or os.path.exists(os.path.join(tmp, "net.yaml")):
                    failures.append(f"{command} {' '.join(args)}: expected exit 2 with {want!r}, no file; "
                                    f"got {rc}, {err!r}")
            rc, out, err = run("validate", command, "--hw", no_nics, "--hosts", "node1,node2", "--output",
                               os.path.join(tmp, "net.yaml"))
            want = f"--hw {no_nics}: the node has no NICs (node.nics)"
            if rc != 2 or want not in err:
                failures.append(f"{command} without NICs: expected exit 2 with {want!r}; got {rc}, {err!r}")
    for args, want in ((["--backend", "nccl", "--np", "2", "--hw", "configs/hw/dgx-h100.yaml", "--env", "1X=2"],
                        "--env '1X=2': expected NAME=VALUE with NAME of letters, digits and _"),
                       (["--backend", "nccl", "--np", "2", "--hw", "configs/hw/dgx-h100.yaml", "--env", "NCCL_ALGO"],
                        "--env 'NCCL_ALGO': expected NAME=VALUE"),
                       (["--cluster", "/never.yaml", "--env", "NCCL_ALGO=Ring"],
                        "--env sets the ranks' environment under mpirun on GPU hosts; --backend mpi runs on the "
                        "emulated cluster")):
        rc, out, err = run("validate", "collectives", *args)
        if rc != 2 or want not in err:
            failures.append(f"collectives {' '.join(args)}: expected exit 2 with {want!r}; got {rc}, {err!r}")
    rc, out, err = run("validate", "collectives", "--backend", "gloo", "--np", "2", "--hw", "configs/hw/dgx-h100.yaml")
    if rc != 2 or "--backend 'gloo': expected one of mpi, nccl" not in err:
        failures.append(f"--backend gloo: expected exit 2 naming mpi and nccl; got {rc}, {err!r}")
    rc, out, err = run("validate", "collectives", "--backend", "nccl", "--hw", "configs/hw/dgx-h100.yaml")
    if rc != 2 or "needs --np" not in err:
        failures.append(f"--backend nccl without --np: expected exit 2 asking for it; got {rc}, {err!r}")


def on_gpu(count):
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "squeezenet.json")
        # Entries under the catalogue's h100-sxm, whatever the GPU, so that dgx-h100.yaml's model finds them.
        rc, out, err = run("validate", "profile", "--model", "squeezenet", "--device", "cuda", "--repeat", "5",
                           "--warmup", "2", "--profile-device", "h100-sxm", "-o", profile)
        total = re.search(r"sum of node medians: (\S+ \S+)", out)
        if rc != 0 or not total or not os.path.exists(profile):
            failures.append(f"validate profile --device cuda failed: exit {rc}, {out[:300]!r}, {err[:500]!r}")
        else:
            rc, sim, err = run("model", "sim", "squeezenet", "--hw", "configs/hw/dgx-h100.yaml", "--dtype", "f32",
                               "--profile", profile)
            step = re.search(r"step time: (\S+ \S+)", sim)
            kernels = re.search(r"kernels: (\d+) .*, (\d+) timed from the profile database", sim)
            if rc != 0 or not step or not kernels or step.group(1) != total.group(1) or \
                    kernels.group(1) != kernels.group(2):
                failures.append(f"model sim --profile does not predict the profile's sum {total.group(1)}: {sim!r}")
        calibrate_and_grid(tmp)
    if not shutil.which("mpirun"):
        print("note: no mpirun; the NCCL check is not run")
        return
    np = min(count, 8)
    rc, out, err = run("validate", "collectives", "--backend", "nccl", "--np", str(np), "--hw",
                       "configs/hw/dgx-h100.yaml", "--sizes", "4KiB:64MiB:16", "--iterations", "3")
    rows = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    # nccl-tests' columns: size count type redop root time algbw busbw spread ranks #wrong | simulated ...
    if rc != 0 or len(rows) != 4 or any(r[10] != "0" for r in rows):
        failures.append(f"NCCL all-reduce on {np} GPUs: expected 4 sizes with #wrong 0; got {rc}, {out!r}, {err!r}")
    # The ranks get --env's settings: the run reports them and still computes every element right.
    rc, out, err = run("validate", "collectives", "--backend", "nccl", "--np", str(np), "--hw",
                       "configs/hw/dgx-h100.yaml", "--sizes", "1MiB:4MiB:4", "--iterations", "3", "--env",
                       "NCCL_ALGO=Ring", "--env", "NCCL_MAX_NCHANNELS=1")
    rows = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    if rc != 0 or "with NCCL_ALGO=Ring NCCL_MAX_NCHANNELS=1" not in out or len(rows) != 2 or \
            any(r[10] != "0" for r in rows):
        failures.append(f"NCCL all-reduce with --env: expected 2 sizes, the settings named, #wrong 0; got {rc}, "
                        f"{out!r}, {err!r}")
    if count < 2:
        print("note: one GPU; validate ring-slices needs two")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ring, node = os.path.join(tmp, "ring.yaml"), os.path.join(tmp, "node.yaml")
        # This machine as a switched node of `np` H100s (the table describes every GPU of the node).
        with open("configs/hw/dgx-h100.yaml") as f:
            text = f.read()
        with open(node, "w") as f:
            f.write(text.replace("  gpus: 8\n", f"  gpus: {np}\n"))
        rc, out, err = run("validate", "ring-slices", "--np", str(np), "--hw", node,
                           "--slices", "64KiB:256KiB:4", "--loops", "2,4", "--iterations", "3", "--output", ring)
        # Two slice sizes, each timed at 2 and 4 loops: the time per handoff is positive and the written system
        # file carries NCCL's channel count and both points.
        if rc != 0 or "node.fabric.nccl_ring" not in out or not os.path.exists(ring):
            failures.append(f"ring-slices on {np} GPUs failed: {rc}, {out!r}, {err[-2000:]!r}")
        else:
            rc, shown, err = run("hw", "show", ring)
            if rc != 0 or not re.search(r"nccl ring\s+\d+ channels, .*64\.00 KiB in .*256\.00 KiB in", shown):
                failures.append(f"hw show of the written file lacks the measured ring: {shown!r}")


def calibrate_and_grid(tmp):
    params, points = os.path.join(tmp, "cost.json"), os.path.join(tmp, "points.csv")
    rc, out, err = run("validate", "calibrate-cost", "--device", "cuda", "--quick", "--hw", "configs/hw/dgx-h100.yaml",
                       "--target-seconds", "0.02", "-o", params, "--points-csv", points)
    if rc != 0 or not os.path.exists(params):
        failures.append(f"calibrate-cost --device cuda: exit {rc}: {err[-500:]!r}")
        return
    doc = json.load(open(params))
    if doc.get("device") != "h100-sxm":
        failures.append(f"calibrate-cost: parameters for {doc.get('device')!r}, expected the system's h100-sxm")
    # Every operator with its own fitted curve (doc["ops"]): the mean |log(predicted/measured)| over its
    # microbenchmarks after the fit is at most the priors' (operators without one use their kind's curve,
    # fitted on the whole kind, which may be worse for them alone).
    rows = list(csv.DictReader(open(points)))
    by_op = {}
    for r in rows:
        by_op.setdefault(r["op"], []).append(r)
    if not doc.get("ops"):
        failures.append("calibrate-cost: no operator got its own curve")
    for op, group in by_op.items():
        if op not in doc.get("ops", {}):
            continue
        def mean_log(col):
            return sum(abs(math.log(float(r[col]) / float(r["measured_us"]))) for r in group) / len(group)
        if mean_log("predicted_fitted_us") > mean_log("predicted_prior_us") + 1e-9:
            failures.append(f"{op}: fitted curve worse than the priors on its own microbenchmarks")
    exp = os.path.join(tmp, "grid.yaml")
    with open(exp, "w") as f:
        f.write(f"experiment: g\nkind: gpu-validation\nhw: {os.path.abspath('configs/hw/dgx-h100.yaml')}\n"
                f"cost_params: {params}\nrepeat: 5\nwarmup: 1\nmodels: [{{model: squeezenet}}]\n")
    rc, out, err = run("run", exp, "--output", os.path.join(tmp, "results"), "--no-plots")
    ops = os.path.join(tmp, "results", "g", "ops.csv")
    if rc != 0 or not os.path.exists(ops):
        failures.append(f"gpu-validation run: exit {rc}: {err[-500:]!r}")
        return
    models = list(csv.DictReader(open(os.path.join(tmp, "results", "g", "models.csv"))))
    measured = [float(r["measured_us"]) for r in csv.DictReader(open(ops))]
    if len(models) != 1 or int(models[0]["distinct_ops"]) != len(measured) or min(measured) <= 0 or \
            int(models[0]["library_ops"]) + int(models[0]["reference_ops"]) != len(measured) or \
            int(models[0]["library_ops"]) < int(models[0]["reference_ops"]):
        failures.append(f"gpu-validation: squeezenet's operators not measured, or mostly off the GPU: {models}")


count = gpus()
if MODE == "unavailable":
    if count:
        print(f"skipped: {count} GPU(s) here; the no-GPU messages cannot be checked")
        sys.exit(77)
    unavailable()
elif MODE == "gpu":
    if not count:
        print("skipped: no GPU here (nvidia-smi lists none); the GPU backend cannot run")
        sys.exit(77)
    if not BUILT:
        failures.append("a GPU is here but strata was built without CUDA (configure with -DSTRATA_CUDA=ON)")
    else:
        on_gpu(count)
else:
    sys.exit(f"unknown mode {MODE}")
for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else f"{MODE}: checks passed")
sys.exit(1 if failures else 0)
