#!/usr/bin/env python3
"""The GPU backend through the command line (docs/validate.md, "GPU backend").

Usage: cli_cuda_test.py <strata binary> <built with CUDA: 1|0> unavailable|gpu   (run from the source root)

Whether this machine has a GPU is decided independently of strata: `nvidia-smi -L` lists one.

unavailable  (no GPU here; otherwise skipped, exit 77): `validate profile --device cuda`, `validate graphs
             --device cuda` and `validate collectives --backend nccl` fail with exit status 2 and the clear
             reason, and write no file: "no CUDA device (cudaGetDeviceCount: ...)" when strata was built with
             CUDA, "strata was built without CUDA" when not. Unknown devices and backends are named with the
             choices.
gpu          (a GPU here; otherwise skipped, exit 77): `validate profile --device cuda` writes a profile that
             `model sim --profile` reads back, predicting exactly its sum of node medians with every kernel
             timed from it; `validate collectives --backend nccl` over the node's GPUs (at most 8) reports 0
             wrong elements at every size.
"""
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
    rc, out, err = run("validate", "profile", "--model", "squeezenet", "--device", "tpu", "-o", "/tmp/x.json")
    if rc != 2 or "--device 'tpu': expected one of cpu, cuda" not in err:
        failures.append(f"--device tpu: expected exit 2 naming cpu and cuda; got {rc}, {err!r}")
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
