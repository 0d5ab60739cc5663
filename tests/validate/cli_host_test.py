#!/usr/bin/env python3
"""`strata validate host --quick` end to end (docs/replay.md §1): it prints the measurements and writes a
system YAML whose comment header names this CPU (/proc/cpuinfo, read here) and the thread count, whose
gpu figures are the printed ones, and whose cache levels lie within the measured curve (96 KiB up to cpu0's
last-level cache: sysfs, read here), smallest first, each faster than the next and the last faster than memory; `strata model sim resnet50 --hw FILE --dtype f32` loads it, runs on host-cpu
with the machine's memory as its capacity (sysconf, read here) and predicts a different time than the
catalogue's host-cpu; a missing output folder and --repeat 0 exit with status 2 and write nothing. Reports
itself skipped (exit 77) when strata was built without oneDNN or OpenMP.

Usage: cli_host_test.py <strata binary>   (run from the source root)
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


def number(pattern, text):
    m = re.search(pattern, text)
    return float(m.group(1)) if m else None


with tempfile.TemporaryDirectory() as tmp:
    out_file = os.path.join(tmp, "host.yaml")
    rc, out, err = run("validate", "host", "--quick", "--repeat", "0", "-o", out_file)
    if rc != 2 or "--repeat" not in err or os.path.exists(out_file):
        failures.append(f"--repeat 0: expected exit 2 naming --repeat, no file; got {rc}, {err!r}")
    rc, out, err = run("validate", "host", "--quick", "-o", os.path.join(tmp, "missing", "host.yaml"))
    if rc != 2 or "missing" not in err:
        failures.append(f"missing output folder: expected exit 2 naming it; got {rc}, {err!r}")

    rc, out, err = run("validate", "host", "--quick", "-o", out_file)
    if rc == 2 and "not found when strata was built" in err:
        print("skipped:", err.strip())
        sys.exit(77)
    if rc != 0 or not os.path.exists(out_file):
        print(out, err)
        sys.exit(f"validate host failed: exit {rc}")
    yaml = open(out_file).read()
    model = re.search(r"^model name\s*: (.*)$", open("/proc/cpuinfo").read(), re.M)
    if model and f"# CPU: {model.group(1)} " not in yaml:
        failures.append(f"the header does not name the CPU {model.group(1)!r}: {yaml[:400]!r}")
    if "1 OpenMP threads" not in yaml or "1 threads" not in out:
        failures.append(f"the thread count (OMP_NUM_THREADS=1) is not reported: {yaml[:400]!r}, {out[:300]!r}")
    # The YAML's figures are the printed ones (6 significant digits in the file, 1-2 decimals printed).
    printed_f32 = number(r"peak f32\s+([\d.]+) GFLOP/s", out)
    printed_triad = number(r"STREAM triad\s+([\d.]+) GB/s", out)
    yaml_f32 = re.search(r"fp32: ([\d.e+]+) (GFLOPS|TFLOPS)", yaml)
    # The file writes the unit that keeps the number readable: MB/s below 1 GB/s (a sanitized build's triad).
    yaml_bw = re.search(r"hbm_bandwidth: ([\d.e+]+) (MB/s|GB/s|TB/s)", yaml)
    bw = float(yaml_bw.group(1)) * {"MB/s": 1e-3, "GB/s": 1, "TB/s": 1e3}[yaml_bw.group(2)] if yaml_bw else None
    if not (printed_f32 and printed_triad and yaml_f32 and yaml_bw):
        failures.append(f"figures missing: {out!r} {yaml!r}")
    else:
        f32 = float(yaml_f32.group(1)) * (1 if yaml_f32.group(2) == "GFLOPS" else 1e3)
        if abs(f32 - printed_f32) > 0.051 or abs(bw - printed_triad) > 0.0051:
            failures.append(f"YAML fp32 {f32} GFLOPS / {bw} GB/s differ from printed {printed_f32} / {printed_triad}")
    if "launch_overhead:" not in yaml or "model: host-cpu" not in yaml:
        failures.append(f"gpu entry incomplete: {yaml!r}")
    # The cache levels: working sets of the curve within the last-level cache sysfs lists for cpu0, smallest
    # first, each faster than the next, the last faster than memory.
    caches = [(int(c) * {"MiB": 2**20, "KiB": 2**10, "B": 1}[cu], float(b) * {"MB/s": 1e-3, "GB/s": 1, "TB/s": 1e3}[bu])
              for c, cu, b, bu in re.findall(
                  r"- \{capacity: (\d+) (MiB|KiB|B), bandwidth: ([\d.e+]+) (MB/s|GB/s|TB/s)\}", yaml)]
    levels = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    if os.path.isdir(base):
        for idx in os.listdir(base):
            try:
                level = int(open(f"{base}/{idx}/level").read())
                size = open(f"{base}/{idx}/size").read().strip()
                levels.append((level, int(size[:-1]) * {"K": 2**10, "M": 2**20}[size[-1]]))
            except (OSError, ValueError, KeyError):
                continue
    if levels:
        llc = max(levels)[1]
        if not caches:  # allowed only where the curve shows none (e.g. under ASan, which flattens it)
            if "cache level      none faster than memory measured" not in out:
                failures.append(f"no cache level in the YAML, and the report does not say why: {yaml!r}")
        # Each capacity lies within the curve (96 KiB up) and the last-level cache: sysfs's (read above), or
        # glibc's (getconf) where sysfs lists none.
        try:
            glibc = int(subprocess.run(["getconf", "LEVEL3_CACHE_SIZE"], capture_output=True,
                                       text=True).stdout.strip() or 0)
        except (OSError, ValueError):
            glibc = 0
        limit = max(llc or glibc, 2**20)
        for i, (capacity, cache_bw) in enumerate(caches):
            if capacity < 96 * 2**10 or capacity > limit:
                failures.append(f"cache capacity {capacity} B is not within the curve (96 KiB to {limit} B)")
            behind = caches[i + 1][1] if i + 1 < len(caches) else bw
            if behind is not None and cache_bw <= behind:
                failures.append(f"cache level {i} at {cache_bw} GB/s not above the next ({behind} GB/s)")
            if i + 1 < len(caches) and capacity >= caches[i + 1][0]:
                failures.append(f"cache levels not smallest first: {caches}")
        if len(caches) != yaml.count("    - {capacity:") or (caches and "  cache:\n" not in yaml):
            failures.append(f"cache levels unreadable in {yaml!r}")

    rc, sim, err = run("model", "sim", "resnet50", "--hw", out_file, "--dtype", "f32")
    rc2, sim_catalogue, _ = run("model", "sim", "resnet50", "--hw", "configs/validate/host-cpu.yaml", "--dtype",
                                "f32")
    step = re.search(r"step time: (\S+ \S+)", sim)
    step_catalogue = re.search(r"step time: (\S+ \S+)", sim_catalogue)
    hbm = number(r"HBM ([\d.]+) GiB", sim)
    memory_gib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    if rc != 0 or rc2 != 0 or not step or not step_catalogue or "(host-cpu)" not in sim:
        failures.append(f"model sim with the written file failed: exit {rc}, {sim[:300]!r}, {err[:300]!r}")
    else:
        if step.group(1) == step_catalogue.group(1):
            failures.append(f"the measured figures did not change the prediction: {step.group(1)}")
        if hbm is None or abs(hbm - memory_gib) > 0.01 * memory_gib + 0.01:
            failures.append(f"HBM {hbm} GiB is not this machine's memory {memory_gib:.2f} GiB: {sim[:300]!r}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "validate host end-to-end checks passed")
sys.exit(1 if failures else 0)
