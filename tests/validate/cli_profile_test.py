#!/usr/bin/env python3
"""`strata validate profile` end to end (docs/replay.md §1): a profile of squeezenet is written, and
`strata model sim --profile` reads it back and predicts exactly the profile's sum of node medians with every
kernel timed from it (the roofline's prediction differs); the same in bf16 (--dtype bf16: the entries are
keyed by the bf16 types, so `model sim --dtype bf16` finds every kernel in the bf16 profile and none in the f32
one; skipped on a CPU without bf16 kernels, where the command must refuse naming the CPU feature); an unknown
device is refused with exit status 2 and no file written (--device cuda: tests/validate/cli_cuda_test.py). Reports itself skipped (exit 77) when strata
was built without oneDNN.

Usage: cli_profile_test.py <strata binary>   (run from the source root)
"""
import os
import re
import subprocess
import sys
import tempfile

STRATA = sys.argv[1]
ENV = dict(os.environ, OMP_NUM_THREADS="1")  # one thread: a shared 2-core machine stalls OpenMP barriers
failures = []


def run(*args):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=300, env=ENV)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as tmp:
    profile = os.path.join(tmp, "squeezenet.json")
    rc, out, err = run("validate", "profile", "--model", "squeezenet", "--device", "tpu", "-o", profile)
    if rc != 2 or "expected one of cpu, cuda" not in err or os.path.exists(profile):
        failures.append(f"--device tpu: expected exit 2 naming cpu and cuda, no file; got {rc}, {err!r}")

    rc, out, err = run("validate", "profile", "--model", "squeezenet", "--rounds", "0", "-o", profile)
    if rc != 2 or "--rounds" not in err or os.path.exists(profile):
        failures.append(f"--rounds 0: expected exit 2 naming --rounds, no file; got {rc}, {err!r}")

    rc, out, err = run("validate", "profile", "--model", "squeezenet", "--repeat", "3", "--warmup", "1",
                       "--rounds", "2", "-o", profile)
    if rc == 2 and "oneDNN was not found" in err:
        print("skipped: strata was built without oneDNN")
        sys.exit(77)
    if "round 2/2 done" not in err or not re.search(r"2 rounds, each instance's smallest round median kept", out):
        failures.append(f"validate profile --rounds 2: no second round in {err[-300:]!r} / {out[-600:]!r}")
    total = re.search(r"sum of node medians: (\S+ \S+)", out)
    if rc != 0 or not total or not os.path.exists(profile):
        failures.append(f"validate profile failed: exit {rc}, stdout {out[:300]!r}, stderr {err[:300]!r}")
    else:
        sim = ["model", "sim", "squeezenet", "--hw", "configs/validate/host-cpu.yaml", "--dtype", "f32"]
        rc, with_profile, err = run(*sim, "--profile", profile)
        step = re.search(r"step time: (\S+ \S+)", with_profile)
        kernels = re.search(r"kernels: (\d+) .*, (\d+) timed from the profile database", with_profile)
        if rc != 0 or not step or not kernels:
            failures.append(f"model sim --profile failed: exit {rc}, {with_profile[:300]!r}, {err[:300]!r}")
        else:
            if step.group(1) != total.group(1):
                failures.append(f"model sim step time {step.group(1)} != profile's sum {total.group(1)}")
            if kernels.group(1) != kernels.group(2):
                failures.append(f"not every kernel timed from the profile: {kernels.group(0)}")
        rc, roofline, err = run(*sim)
        step_roofline = re.search(r"step time: (\S+ \S+)", roofline)
        if rc != 0 or not step_roofline or (step and step_roofline.group(1) == step.group(1)):
            failures.append(f"roofline prediction missing or equal to the profile's: {roofline[:200]!r}")

    # bf16: profile, then model sim --dtype bf16 reads it back; the f32 profile has no bf16 entries.
    bf16 = os.path.join(tmp, "squeezenet-bf16.json")
    rc, out, err = run("validate", "profile", "--model", "squeezenet", "--dtype", "bf16", "--repeat", "3",
                       "--warmup", "1", "-o", bf16)
    total16 = re.search(r"sum of node medians: (\S+ \S+)", out)
    if rc != 0 and "avx512_bf16" in err and "--dtype f32" in err and not os.path.exists(bf16):
        print("bf16 part skipped: this CPU has no bf16 kernels (refused as it must be)")
    elif rc != 0 or not total16 or not os.path.exists(bf16):
        failures.append(f"validate profile --dtype bf16 failed: exit {rc}, {out[:300]!r}, {err[:300]!r}")
    else:
        if "--dtype bf16 --profile" not in out:
            failures.append(f"the hint does not name --dtype bf16: {out[-300:]!r}")
        if "avx512_core_bf16" not in out and "amx" not in out:
            failures.append(f"no oneDNN bf16 implementation named: {out[:600]!r}")
        sim16 = ["model", "sim", "squeezenet", "--hw", "configs/validate/host-cpu.yaml", "--dtype", "bf16"]
        rc, with16, err = run(*sim16, "--profile", bf16)
        step16 = re.search(r"step time: (\S+ \S+)", with16)
        kernels16 = re.search(r"kernels: (\d+) .*, (\d+) timed from the profile database", with16)
        if rc != 0 or not step16 or not kernels16:
            failures.append(f"model sim --dtype bf16 --profile failed: exit {rc}, {with16[:300]!r}, {err[:300]!r}")
        else:
            if step16.group(1) != total16.group(1):
                failures.append(f"bf16 step time {step16.group(1)} != the bf16 profile's sum {total16.group(1)}")
            if kernels16.group(1) != kernels16.group(2):
                failures.append(f"not every bf16 kernel timed from the bf16 profile: {kernels16.group(0)}")
        rc, roofline16, err = run(*sim16)
        step_roofline16 = re.search(r"step time: (\S+ \S+)", roofline16)
        if rc != 0 or not step_roofline16 or (step16 and step_roofline16.group(1) == step16.group(1)):
            failures.append(f"bf16 roofline prediction missing or equal to the profile's: {roofline16[:200]!r}")
        rc, cross, err = run(*sim16, "--profile", profile)
        crossed = re.search(r"kernels: (\d+) .*, (\d+) timed from the profile database", cross)
        if rc != 0 or not crossed or crossed.group(2) != "0":
            failures.append(f"the f32 profile timed bf16 kernels (keys must carry the dtype): {cross[:300]!r}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "validate profile end-to-end checks passed")
sys.exit(1 if failures else 0)
