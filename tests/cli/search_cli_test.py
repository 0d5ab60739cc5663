#!/usr/bin/env python3
"""Golden-output tests of `strata synth` (placements and reduction programs against brute force), `strata model`
(published parameter counts), `strata subst` and `strata optimize` (helpers and entry point: cli_common.py).
"""
import itertools
import json
import math
import os
import re
import tempfile
import unittest
from functools import lru_cache

import cli_common
from cli_common import (PUBLISHED_PARAMS, TRUE_AND_FALSE_RULES, gb_per_s, read_text, src, strata, write_text,
                        yaml_scalar)


# --- synth -------------------------------------------------------------------------------------------------------

def placement_matrices(axes, levels):
    """Every integer matrix with row products = axes and column products = levels (P2's placements)."""
    def factorizations(n, k):
        if k == 1:
            yield (n,)
            return
        for d in range(1, n + 1):
            if n % d == 0:
                for rest in factorizations(n // d, k - 1):
                    yield (d,) + rest
    out = []
    for rows in itertools.product(*[list(factorizations(a, len(levels))) for a in axes]):
        if all(math.prod(r[j] for r in rows) == levels[j] for j in range(len(levels))):
            out.append([list(r) for r in rows])
    return out


def count_programs(card, max_size=5):
    """Reduction programs on a synthesis hierarchy (levels `card` under a root), by brute force over the
    chunk-state rules of docs/reduce.md ("Semantics"): every sequence of (grouping, collective) of at most
    max_size steps whose last step reaches the all-reduced state."""
    n = len(card)
    k = math.prod(card)

    def digits(d):
        out = []
        for c in reversed(card):
            out.append(d % c)
            d //= c
        return out[::-1]

    def groups(first, last, master_from=None):
        by = {}
        for d in range(k):
            dg = digits(d)
            if master_from is not None and any(dg[l - 1] for l in range(master_from, n + 1)):
                continue
            key = tuple(dg[l - 1] for l in range(1, n + 1) if l < first or l > last)
            by.setdefault(key, []).append(d)
        return tuple(sorted(tuple(g) for g in by.values()))

    gs = set()
    for e in range(n + 1):
        gs.add(groups(e + 1, n))
        for a in range(e):
            gs.add(groups(a + 1, e))
            gs.add(groups(a + 1, e, master_from=e + 1))
    groupings = [g for g in gs if len(g[0]) > 1]
    full = (1 << k) - 1

    def rows(s, d):
        return frozenset(r for r in range(k) if s[d][r])

    def apply(s, op, g):
        s = [list(x) for x in s]
        for grp in g:
            rs = rows(s, grp[0])
            if op == "AG":
                seen = set()
                for d in grp:
                    r = rows(s, d)
                    if not r or r & seen or len(r) != len(rs):
                        return None
                    seen |= r
                merged = [0] * k
                for d in grp:
                    for r in range(k):
                        merged[r] |= s[d][r]
                for d in grp:
                    s[d] = list(merged)
            elif op == "BC":
                root = s[grp[0]]
                if any(s[d][r] & ~root[r] for d in grp for r in range(k)):
                    return None
                if all(s[d] == root for d in grp):
                    return None
                for d in grp:
                    s[d] = list(root)
            else:
                if not rs:
                    return None
                total = [0] * k
                for d in grp:
                    if rows(s, d) != rs:
                        return None
                    for r in range(k):
                        if total[r] & s[d][r]:
                            return None
                        total[r] |= s[d][r]
                held = sorted(rs)
                if op == "RS" and len(held) % len(grp):
                    return None
                block = len(held) // len(grp)
                for i, d in enumerate(grp):
                    for r in range(k):
                        keep = op == "AR" or (op == "RD" and i == 0) or (
                            op == "RS" and r in rs and held.index(r) // block == i)
                        s[d][r] = total[r] if keep else 0
        return tuple(tuple(x) for x in s)

    @lru_cache(maxsize=None)
    def count(s, steps):
        if all(m == full for x in s for m in x):
            return 1
        if steps == 0:
            return 0
        total = 0
        for g in groupings:
            for op in ("AR", "RS", "AG", "RD", "BC"):
                nxt = apply(s, op, g)
                if nxt is not None:
                    total += count(nxt, steps - 1)
        return total

    start = tuple(tuple(1 << d for _ in range(k)) for d in range(k))
    return count(start, max_size)


class Synth(unittest.TestCase):
    def test_json_records(self):
        hw = src("configs/hw/gcp-a100x16.yaml")
        r = strata("synth", "--hw", hw, "--nodes", "4", "--axes", "4,16", "--reduce", "0", "--bytes", "4GiB",
                   "--algo", "both", "--format", "json")
        self.assertEqual(r.rc, 0, r)
        records = json.loads(r.out)
        matrices = placement_matrices([4, 16], [4, 16])
        self.assertEqual(len(records), 2 * len(matrices))  # placements x {ring, tree}
        self.assertEqual(sorted(json.dumps(m) for m in matrices),
                         sorted({json.dumps(rec["matrix"]) for rec in records}))
        nic = gb_per_s(re.search(r"nics:\s*\n\s*count: 1\s*\n\s*link: \{[^}]*bandwidth: ([0-9.]+ GB/s)",
                                 read_text(hw)).group(1))
        nvlink = gb_per_s(yaml_scalar(hw, "bandwidth")) * float(yaml_scalar(hw, "efficiency"))
        S = 4 * 2**30
        for rec in records:
            m = rec["matrix"]
            # Reduction groups: 64/4 groups of 4 GPUs covering every GPU once, each spanning m[0][0] nodes.
            groups = rec["reduction_groups"]
            self.assertEqual(len(groups), 16)
            self.assertEqual(sorted(g for grp in groups for g in grp), list(range(64)))
            for grp in groups:
                self.assertEqual(len({g // 16 for g in grp}), m[0][0])
            # The synthesis hierarchy keeps the reduced axis' factors > 1; program count by brute force.
            card = [f for f in m[0] if f > 1]
            self.assertEqual(rec["programs_synthesized"], count_programs(card), rec)
            self.assertAlmostEqual(rec["speedup"], rec["allreduce_seconds"] / rec["best_seconds"], delta=1e-6)
            self.assertLessEqual(rec["best_seconds"], rec["allreduce_seconds"] * (1 + 1e-9))
            if rec["algorithm"] != "ring":
                continue
            if m == [[4, 1], [1, 16]]:
                # One GPU per node in each group: the 16 groups of a node share its NIC.
                expected = 2 * 3 / 4 * S * 16 / nic
            elif m == [[1, 4], [4, 4]]:
                # Inside one node, every GPU on its own NVSwitch link.
                expected = 2 * 3 / 4 * S / nvlink
            else:
                continue
            self.assertAlmostEqual(rec["allreduce_seconds"], expected, delta=2e-3 * expected, msg=rec)

    def test_table_and_errors(self):
        r = strata("synth", "--hw", src("configs/hw/gcp-a100x16.yaml"), "--nodes", "4", "--axes", "4,16",
                   "--reduce", "0", "--bytes", "4GiB", "--algo", "both", "--top", "0")
        self.assertEqual(r.rc, 0, r)
        ranks = [int(l.split()[0]) for l in r.out.splitlines() if re.match(r"^\s+\d+\s+\[\[", l)]
        self.assertEqual(ranks, list(range(1, 2 * len(placement_matrices([4, 16], [4, 16])) + 1)))
        # docs/reduce.md: bad input is an error naming the option.
        base = ["synth", "--hw", src("configs/hw/gcp-a100x16.yaml"), "--nodes", "4"]
        for args, option in [(["--axes", "4,15", "--reduce", "0", "--bytes", "4GiB"], "--axes"),
                             (["--axes", "4,16", "--reduce", "5", "--bytes", "4GiB"], "--reduce"),
                             (["--axes", "4,16", "--reduce", "0", "--bytes", "4x"], "--bytes")]:
            r = strata(*base, *args)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(option, r.err)

    def test_program_counts_by_brute_force(self):
        self.assertEqual(count_programs([4]), 3)  # AllReduce; ReduceScatter-AllGather; Reduce-Broadcast
        self.assertEqual(count_programs([2, 4]), 93)  # docs/reduce.md "Program counts"


# --- models ------------------------------------------------------------------------------------------------------



class Models(unittest.TestCase):
    def test_model_list(self):
        r = strata("model", "list")
        self.assertEqual(r.rc, 0, r)
        lines = r.out.splitlines()
        self.assertEqual(lines[0].split(), ["name", "family", "params", "batch", "seq", "description"])
        table = {l.split()[0]: l.split() for l in lines[1:]}
        for name, n in PUBLISHED_PARAMS.items():
            self.assertEqual(f"{table[name][2]} {table[name][3]}", f"{n / 1e6:.2f} M", name)

    def test_model_show_parameters(self):
        for name, n in PUBLISHED_PARAMS.items():
            r = strata("model", "show", name)
            self.assertEqual(r.rc, 0, r)
            m = re.search(r"parameters: ([0-9.]+) M \(([0-9.]+) MiB\)", r.out)
            self.assertEqual(m.group(1), f"{n / 1e6:.2f}")
            self.assertAlmostEqual(float(m.group(2)), n * 4 / 2**20, delta=0.006)  # f32

    def test_model_sim_inference(self):
        n = PUBLISHED_PARAMS["resnet50"]
        r = strata("model", "sim", "resnet50", "--hw", src("configs/hw/dgx-a100.yaml"), "--batch", "8")
        self.assertEqual(r.rc, 0, r)
        step = re.search(r"step time: ([0-9.]+) (us|ms)\s+throughput: ([0-9.]+) samples/s", r.out)
        step_s = float(step.group(1)) * (1e-6 if step.group(2) == "us" else 1e-3)
        self.assertAlmostEqual(float(step.group(3)), 8 / step_s, delta=2e-3 * 8 / step_s)
        mem = re.search(r"parameters ([0-9.]+) MiB \+ optimizer state 0 B", r.out)
        self.assertAlmostEqual(float(mem.group(1)), n * 2 / 2**20, delta=0.006)  # default dtype f16

    def test_model_sim_fp32_adam_memory(self):
        n = PUBLISHED_PARAMS["resnet50"]
        r = strata("model", "sim", "resnet50", "--hw", src("configs/hw/dgx-a100.yaml"), "--train", "--dtype", "f32")
        self.assertEqual(r.rc, 0, r)
        m = re.search(r"parameters ([0-9.]+) MiB \+ optimizer state ([0-9.]+) MiB", r.out)
        self.assertAlmostEqual(float(m.group(1)), n * 4 / 2**20, delta=0.006)
        self.assertAlmostEqual(float(m.group(2)), n * 8 / 2**20, delta=0.006)  # Adam: two f32 moments

    def test_export_round_trip_keeps_the_parameters(self):
        n = PUBLISHED_PARAMS["resnet50"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r50.onnx")
            r = strata("model", "export", "resnet50", "-o", path)
            self.assertEqual(r.rc, 0, r)
            r = strata("model", "show", path)
            self.assertEqual(r.rc, 0, r)
            m = re.search(r"parameters: ([0-9.]+) M \(([0-9.]+) MiB\)", r.out)
            self.assertAlmostEqual(float(m.group(2)), n * 4 / 2**20, delta=0.006)

    def test_errors(self):
        r = strata("model", "show", "nomodel")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("unknown model 'nomodel'", r.err)
        self.assertIn("resnet50", r.err)


# --- subst / optimize --------------------------------------------------------------------------------------------



class Subst(unittest.TestCase):
    def test_axioms(self):
        r = strata("subst", "axioms")
        self.assertEqual(r.rc, 0, r)
        kinds = re.findall(r"^\s*\d+ (axiom|lemma) ", r.out, re.M)
        # README.md: TASO's 44 operator axioms + 3 lemmas, then the axioms operators outside TASO's vocabulary
        # declare (sigmoid and tanh: commuting with concat and transpose).
        self.assertEqual(kinds.count("axiom"), 44 + 4)
        self.assertEqual(kinds.count("lemma"), 3)
        for name in ("sigmoid_concat", "sigmoid_transpose", "tanh_concat", "tanh_transpose"):
            self.assertRegex(r.out, r"(?m)^\s*\d+ axiom\s+" + name + r"\b")

    def test_verify_rows(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tf.rules")
            write_text(path, TRUE_AND_FALSE_RULES)
            r = strata("subst", "verify", path)
            status = dict(re.findall(r"^(\w+)\s+1\s+(\w+)", r.out, re.M))
            self.assertEqual(status.get("comm"), "proved", r)
            self.assertNotEqual(status.get("wrong"), "proved", r)
            self.assertRegex(r.out, r"# summary: 2 rules: 1 proved")

    @staticmethod
    def taso_file_counts(path):
        """(rules, equations, multi-output rules) of a TASO equation file: one `INDEX<TAB>LHS == RHS` per line,
        lines with the same index form one rule."""
        indices = [l.split("\t")[0] for l in read_text(path).splitlines() if re.match(r"^\d+\t", l)]
        per_rule = {i: indices.count(i) for i in indices}
        return len(per_rule), len(indices), sum(1 for n in per_rule.values() if n > 1)

    def test_show_summary_counts_the_file(self):
        path = src("tests/subst/data/taso-rules/taso_shipped_133_equations.txt")
        r = strata("subst", "show", path, "--taso-shapes", "unknown", "--summary")
        self.assertEqual(r.rc, 0, r)
        rules, equations, multi = self.taso_file_counts(path)
        self.assertIn(f"{rules} rules, {equations} equations, {multi} multi-output rules", r.out)

    def test_coverage_of_a_file_by_itself_is_complete(self):
        path = src("tests/subst/data/taso-rules/taso_master_619_equations.txt")
        rules, equations, _ = self.taso_file_counts(path)
        r = strata("subst", "coverage", path, path)
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out, rf"in both:\s+{rules} rules of A occur in B, {rules} rules of B occur in A")
        self.assertRegex(r.out, r"only in A: 0 rules")
        self.assertRegex(r.out, rf"equations: {equations} of A's {equations} occur in B")

    def test_rule_file_error_names_file_line_column(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.rules")
            write_text(path, "rule r (x: 2x4)\n  ewadd(x,y) == x\n")
            r = strata("subst", "verify", path)
            self.assertEqual(r.rc, 2, r)
            # docs/subst.md "Rule format": its three example messages.
            self.assertIn(f"{path}:2:11: 'y' is not an input of rule 'r'", r.err)
            write_text(path, "rule r (a: 2x4x5x5, w: 4x4x3x3)\n  conv2d(1,1,x,2,a,w) == conv2d(1,1,0,2,a,w)\n")
            r = strata("subst", "verify", path)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(f"{path}:2:14: expected an integer for parameter 'pad' (padding) of conv2d, got 'x'", r.err)
            write_text(path, "rule r (x: 2x4)\n  ewadd(x,x) == ewadd(x,x)\nrule r (x: 2x4)\n  ewadd(x,x) == ewadd(x,x)\n")
            r = strata("subst", "verify", path)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(f"{path}:3:6: rule name 'r' already used on line 1", r.err)


class Optimize(unittest.TestCase):
    def test_before_equals_model_sim(self):
        hw = src("configs/hw/dgx-a100.yaml")
        r = strata("optimize", "--model", "squeezenet", "--hw", hw, "--no-check")
        self.assertEqual(r.rc, 0, r)
        before = float(re.search(r"predicted time before: ([0-9.]+) ms", r.out).group(1))
        after = re.search(r"predicted time after:\s+([0-9.]+) ms \(([0-9.]+)x\)", r.out)
        self.assertAlmostEqual(float(after.group(2)), before / float(after.group(1)), delta=0.006)
        applied = re.search(r"substitutions applied \((\d+)\):\n((?:  .*\n?)*)", r.out)
        self.assertEqual(int(applied.group(1)), len(applied.group(2).strip().splitlines()))
        # The cost of the input graph is the single-GPU simulation of the same model (f32, batch 1).
        sim = strata("model", "sim", "squeezenet", "--hw", hw, "--dtype", "f32")
        step = re.search(r"step time: ([0-9.]+) us", sim.out)
        self.assertAlmostEqual(float(step.group(1)) / 1e3, before, delta=1e-4 + 1e-3 * before)

    def test_min_gain_returns_the_input_below_it(self):
        """docs/subst.md "Minimum predicted gain": a minimum just above the best graph's predicted saving keeps
        the input and names what was found; one just below returns that graph."""
        hw = src("configs/hw/dgx-a100.yaml")
        common = ["optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "--budget", "50"]
        any_gain = strata(*common, "--min-gain", "0")
        self.assertEqual(any_gain.rc, 0, any_gain)
        before = float(re.search(r"predicted time before: ([0-9.]+) ms", any_gain.out).group(1))
        after = float(re.search(r"predicted time after:\s+([0-9.]+) ms", any_gain.out).group(1))
        saving = 100 * (1 - after / before)
        self.assertGreater(saving, 0.5)
        kept = strata(*common, "--min-gain", f"{saving * 1.01:.6f}")
        self.assertEqual(kept.rc, 0, kept)
        self.assertRegex(kept.out, rf"predicted time after:\s+{before:.4f} ms \(1\.00x\)")
        self.assertIn("substitutions applied (0):", kept.out)
        self.assertRegex(kept.out, rf"best graph found {after:.4f} ms, [0-9.]+% faster: below the minimum gain of "
                                   r"[0-9.]+% \(--min-gain\), the input graph is returned")
        taken = strata(*common, "--min-gain", f"{saving * 0.99:.6f}")
        self.assertRegex(taken.out, rf"predicted time after:\s+{after:.4f} ms")
        self.assertNotIn("best graph found", taken.out)
        bad = strata(*common, "--min-gain", "101")
        self.assertEqual(bad.rc, 2, bad)
        self.assertIn("--min-gain", bad.err)


if __name__ == "__main__":
    cli_common.main()
