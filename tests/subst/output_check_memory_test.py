#!/usr/bin/env python3
"""Peak memory of `strata optimize` with its default equality check (issue 10 defect 7: "< 500 MB").

Two models, one per cause found: BERT-base, whose 110 M parameters are 880 MB in double when the reference
executor materialized every weight before running (898 MB peak RSS before the fix), and Inception-v3, whose
search kept every explored graph (610 MB peak RSS with or without the check). The peak resident set of the
whole command comes from wait4(2); the executor's own peak (printed in the check's verdict) must lie between
two bounds derived from the model's shapes: at least BERT-base's largest weight, the 30522 x 768 word
embedding in double, and well below all its weights.

Run by ctest:  output_check_memory_test.py --strata build/experiments/strata --source .
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import unittest

STRATA = ""
SOURCE = ""
LIMIT_BYTES = 500 * 10**6
MIB = 1 << 20


def optimize(model, out_dir):
    """stdout and peak RSS (bytes) of `strata optimize --model model` with the default check."""
    args = [STRATA, "optimize", "--model", model, "--hw", os.path.join(SOURCE, "configs/hw/dgx-a100.yaml"),
            "-o", os.path.join(out_dir, model + ".onnx")]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, cwd=SOURCE, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    assert proc.returncode == 0, f"{' '.join(args)} -> rc {proc.returncode}\n{stdout[-2000:]}\n{stderr[-2000:]}"
    return stdout, usage.ru_maxrss * 1024  # Linux reports kilobytes


def verdict(stdout):
    line = next(l for l in stdout.splitlines() if l.startswith("check"))
    m = re.search(r"pass: .*executor peak ([0-9.]+) MiB", line)
    assert m, line
    return float(m.group(1)) * MIB


class OptimizeWithCheckMemory(unittest.TestCase):
    def test_bert_base(self):
        with tempfile.TemporaryDirectory() as d:
            stdout, rss = optimize("bert-base", d)
        self.assertLess(rss, LIMIT_BYTES, f"peak RSS {rss / MIB:.1f} MiB")
        embedding = 30522 * 768 * 8  # BERT's word-piece vocabulary x hidden size, double
        all_weights = 109_482_240 * 8  # BERT-base with pooler (Devlin et al. 2019; `strata model list`)
        peak = verdict(stdout)
        self.assertGreaterEqual(peak, embedding - 0.05 * MIB)  # printed to 0.1 MiB
        self.assertLess(peak, all_weights / 4)

    def test_inception_v3(self):
        with tempfile.TemporaryDirectory() as d:
            stdout, rss = optimize("inception-v3", d)
        self.assertLess(rss, LIMIT_BYTES, f"peak RSS {rss / MIB:.1f} MiB")
        verdict(stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--strata", required=True)
    parser.add_argument("--source", required=True)
    args, rest = parser.parse_known_args()
    STRATA, SOURCE = os.path.abspath(args.strata), os.path.abspath(args.source)
    unittest.main(argv=[sys.argv[0], *rest])
