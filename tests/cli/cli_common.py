#!/usr/bin/env python3
"""Shared by the golden-output tests of the `strata` command line (tests/cli/*_test.py), in the style of LLVM's
FileCheck: running the built binary, paths in the source tree, reading strata's nccl-tests table, NCCL's latency
constants the closed forms use, and the entry point every test module calls.

Each test module checks the structure of what `strata` prints (columns, units, row counts, JSON fields) and, where
one exists, a value derived independently of strata: closed forms (ring all-reduce time from the link bandwidth in
the hardware YAML and NCCL's published latency constants), published numbers (ResNet-50 and BERT-base parameter
counts), brute force (placement matrices, reduction-program counts). Output is never compared verbatim with a
stored copy of itself.

Run by ctest, one test per class:  <module>_test.py --strata build/experiments/strata --source . ClassName
(tests/cli/CMakeLists.txt names each class with its module).
"""
import argparse
import os
import re
import subprocess
import sys
import unittest

STRATA = ""
SOURCE = ""

# Published parameter counts: torchvision resnet50 (25,557,032) and BERT-base-uncased incl. pooler (109,482,240).
PUBLISHED_PARAMS = {"resnet50": 25_557_032, "bert-base": 109_482_240}

# One rule that holds and one that does not, for `strata subst verify` (exit status 1 on the false one).
TRUE_AND_FALSE_RULES = """rule comm (x: 2x4, y: 2x4)
  ewadd(x,y) == ewadd(y,x)
rule wrong (x: 2x4, y: 2x4)
  ewadd(x,y) == ewmul(x,y)
"""


class Run:
    def __init__(self, args, cwd=None, timeout=600):
        proc = subprocess.run([STRATA, *args], cwd=cwd or SOURCE, capture_output=True, text=True, timeout=timeout)
        self.args, self.rc, self.out, self.err = args, proc.returncode, proc.stdout, proc.stderr

    def __repr__(self):
        return f"strata {' '.join(self.args)} -> rc {self.rc}\nstdout:\n{self.out[-3000:]}\nstderr:\n{self.err[-3000:]}"


def strata(*args, cwd=None, timeout=600):
    return Run(list(args), cwd=cwd, timeout=timeout)


def src(path):
    return os.path.join(SOURCE, path)


def shipped_experiments():
    """Every experiment file under configs/experiments/, its folders (repro/, ...) included, sorted."""
    found = []
    for root, _, names in os.walk(src("configs/experiments")):
        found += [os.path.join(root, n) for n in names if n.endswith(".yaml")]
    return sorted(found)


def yaml_scalar(path, key):
    """The value of `key: value` in a hardware YAML (flow or block style), as text."""
    text = read_text(path)
    m = re.search(r"\b" + re.escape(key) + r"\s*:\s*([^,}\n#]+)", text)
    assert m, f"{key} not in {path}"
    return m.group(1).strip()


def read_text(path):
    with open(path) as f:
        return f.read()


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def gb_per_s(text):
    m = re.fullmatch(r"([0-9.]+)\s*GB/s", text)
    assert m, text
    return float(m.group(1)) * 1e9


# --- nccl-tests table --------------------------------------------------------------------------------------------

TABLE_COLUMNS = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "algo", "proto"]


def parse_collective_table(text):
    """Rows of `strata sim collective` as dicts; checks the header names the nccl-tests columns and units."""
    lines = text.splitlines()
    header = [l for l in lines if l.startswith("#")]
    names = next(l for l in header if "size" in l and "busbw" in l)
    units = next(l for l in header if "(B)" in l)
    assert names[1:].split() == TABLE_COLUMNS, names
    assert units[1:].split() == ["(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)"], units
    rows = []
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        assert len(f) == len(TABLE_COLUMNS), line
        rows.append(dict(size=float(f[0]), count=float(f[1]), type=f[2], redop=f[3], root=f[4], time_us=float(f[5]),
                         algbw=float(f[6]), busbw=float(f[7]), algo=f[8], proto=f[9], line=line))
    footer = re.search(r"# Avg bus bandwidth\s*:\s*([0-9.]+)", text)
    return rows, header, (float(footer.group(1)) if footer else None)


def sizes_of(lo, hi, factor):
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


# NCCL's latency model (https://github.com/NVIDIA/nccl/blob/v2.18.3-1/src/graph/tuning.cc): baseLat[Ring][Simple]
# = 8.4 us, hwLat[NVLINK][Ring][Simple] = 3.4 us per step; a ring all-reduce takes 2(n-1) steps.
NCCL_RING_SIMPLE_BASE_US = 8.4
NCCL_RING_SIMPLE_NVLINK_HOP_US = 3.4


def main():
    """Takes --strata and --source, then runs the unittest classes of the module run as a script."""
    global STRATA, SOURCE
    parser = argparse.ArgumentParser()
    parser.add_argument("--strata", required=True)
    parser.add_argument("--source", required=True)
    args, rest = parser.parse_known_args()
    STRATA, SOURCE = os.path.abspath(args.strata), os.path.abspath(args.source)
    unittest.main(argv=[sys.argv[0], "-v", *rest])
