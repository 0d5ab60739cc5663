#!/usr/bin/env python3
"""Golden-output tests of the `strata` command line, in the style of LLVM's FileCheck.

Each test runs the built binary and checks the structure of what it prints (columns, units, row counts, JSON
fields) and, where one exists, a value derived here independently of strata: closed forms (ring all-reduce time
from the link bandwidth in the hardware YAML and NCCL's published latency constants), published numbers
(ResNet-50 and BERT-base parameter counts), brute force (placement matrices, reduction-program counts). Output is
never compared verbatim with a stored copy of itself.

Run by ctest, one test per class:  cli_test.py --strata build/experiments/strata --source . ClassName
Classes whose name ends in AfterFix check behaviour that issue 10 defines and another change implements; they are
registered in tests/cli/CMakeLists.txt and switched on there once that change is merged.
"""
import argparse
import csv
import io
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from functools import lru_cache

STRATA = ""
SOURCE = ""


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


class HelpOfEveryCommand(unittest.TestCase):
    def subcommands(self, path):
        r = strata(*path, "--help")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("Usage:", r.out, r)
        m = re.search(r"\nSubcommands:\n((?:  \S.*\n?)+)", r.out)
        return [l.split()[0] for l in m.group(1).splitlines()] if m else []

    def test_every_command_has_help(self):
        seen = []
        todo = [[]]
        while todo:
            path = todo.pop()
            seen.append(path)
            todo.extend(path + [s] for s in self.subcommands(path))
        names = {" ".join(p) for p in seen}
        # The command groups README.md documents.
        for cmd in ["hw list", "hw show", "sim collective", "sim algorithms", "run", "synth", "model list",
                    "model show", "model sim", "model export", "subst verify", "subst axioms", "subst coverage",
                    "subst show", "subst generate", "optimize"]:
            self.assertIn(cmd, names)

    def test_run_help_lists_the_registered_kinds(self):
        r = strata("run", "--help")
        for kind in ["collective-sweep", "p2-reproduction", "subst-optimizers"]:
            self.assertIn(kind, r.out)
        # every kind used by a shipped experiment is listed
        for f in shipped_experiments():
            self.assertIn(yaml_scalar(f, "kind"), r.out)

    def test_no_subcommand_is_an_error(self):
        r = strata()
        self.assertNotEqual(r.rc, 0, r)
        r = strata("bogus-command")
        self.assertNotEqual(r.rc, 0, r)


class HwCommands(unittest.TestCase):
    def test_hw_list_gpus_and_links(self):
        r = strata("hw", "list")
        self.assertEqual(r.rc, 0, r)
        gpus = {}
        for m in re.finditer(r"^  (\S+)\s+(NVIDIA .*?)\s+fp16/bf16\s+([0-9.]+) TFLOPS\s+HBM ([0-9.]+) GiB\s+([0-9.]+) GB/s",
                             r.out, re.M):
            gpus[m.group(1)] = (m.group(2), float(m.group(3)), float(m.group(4)), float(m.group(5)))
        self.assertGreaterEqual(len(gpus), 7)
        # HBM is printed in GiB from the vendor's decimal GB (docs/hardware.md): 80 GB = 80e9 / 2^30 GiB.
        for name, gb in [("v100-sxm2", 32), ("a100-sxm4-40gb", 40), ("a100-sxm4-80gb", 80), ("h100-sxm", 80),
                         ("h200-sxm", 141)]:
            self.assertAlmostEqual(gpus[name][2], gb * 1e9 / 2**30, delta=0.006, msg=name)
        # Datasheet dense fp16 tensor throughput (NVIDIA A100 and H100 SXM datasheets): 312 and 989.4 TFLOPS.
        self.assertEqual(gpus["a100-sxm4-80gb"][1], 312.0)
        self.assertAlmostEqual(gpus["h100-sxm"][1], 989.4, delta=0.05)
        links = {}
        for m in re.finditer(r"^  (\S+)\s+(.*?)\s+line\s+([0-9.]+) GB/s\s+effective\s+([0-9.]+) GB/s\s+latency ([0-9.]+) (ns|us)",
                             r.out, re.M):
            links[m.group(1)] = (float(m.group(3)), float(m.group(4)))
        for kind in ["nvlink3", "nvlink4", "pcie4", "pcie5", "ib-hdr", "ib-ndr"]:
            self.assertIn(kind, links)
        for kind, (line, eff) in links.items():
            self.assertLessEqual(eff, line, kind)
        # Line rates from the standards: NVLink3 25 GB/s per direction per link; HDR 200 Gb/s = 25 GB/s;
        # NDR 400 Gb/s = 50 GB/s.
        self.assertEqual(links["nvlink3"][0], 25.0)
        self.assertEqual(links["ib-hdr"][0], 25.0)
        self.assertEqual(links["ib-ndr"][0], 50.0)

    def test_hw_show_counts_follow_the_yaml(self):
        path = src("configs/hw/dgx-a100.yaml")
        r = strata("hw", "show", path)
        self.assertEqual(r.rc, 0, r)
        gpus = int(yaml_scalar(path, "gpus"))
        per_gpu = int(yaml_scalar(path, "links_per_gpu"))
        self.assertRegex(r.out, rf"= {gpus} GPUs")
        wires = re.findall(r"n0\.gpu(\d+)\s+<->\s+n0\.nvswitch\s+nvlink3\s+x(\d+)\s+([0-9.]+) GB/s", r.out)
        self.assertEqual(sorted(int(w[0]) for w in wires), list(range(gpus)))
        effective = float(re.search(r"^  nvlink3 .*effective\s+([0-9.]+) GB/s", strata("hw", "list").out, re.M).group(1))
        for _, n, bw in wires:
            self.assertEqual(int(n), per_gpu)
            self.assertAlmostEqual(float(bw), per_gpu * effective, delta=0.05)
        r2 = strata("hw", "show", path, "--nodes", "2")
        self.assertEqual(r2.rc, 0, r2)
        self.assertRegex(r2.out, rf"= {2 * gpus} GPUs")
        # The host CPU vendor as the file declares it (DGX A100: AMD EPYC 7742).
        self.assertRegex(r.out, rf"cpu vendor\s+{yaml_scalar(path, 'cpu_vendor')} \(node.host.cpu_vendor\)")
        # No preset carries measured NCCL kernels; a file that does shows its tables as written.
        self.assertIn("nccl ring    not measured (node.fabric.nccl_ring; strata validate ring-slices)", r.out)
        with open(path) as f:
            text = f.read()
        fabric = "  fabric: {wiring: switch, switch: nvswitch2, link: nvlink3, links_per_gpu: 12}"
        self.assertIn(fabric, text)
        self.assertIn("nccl net     not measured (node.nics.nccl_ring; strata validate net-slices)", r.out)
        self.assertIn("nccl tree    not measured (node.nics.nccl_tree; strata validate net-chunks)", r.out)
        self.assertIn("nccl ll128   not measured (node.fabric.nccl_ring_ll128; strata validate ring-ll128)", r.out)
        self.assertIn("nccl net128  not measured (node.nics.nccl_ring_ll128; strata validate net-ll128)", r.out)
        self.assertIn("nccl tree128 not measured (node.nics.nccl_tree_ll128; strata validate net-chunks-ll128)", r.out)
        self.assertIn("nccl chain   not measured (node.fabric.nccl_tree; strata validate tree-chunks)", r.out)
        nics = "  nics: {count: 8, link: ib-hdr}"
        self.assertIn(nics, text)
        measured = text.replace(fabric, fabric[:-1] + ",\n    nccl_ring: {channels: 24, handoffs: "
                                "[{slice: 32KiB, time: 20us}, {slice: 1MiB, time: 500us}]},\n"
                                "    nccl_ring_ll128: {channels: 24, handoffs: [{step: 576000, time: 21us}]},\n"
                                "    nccl_tree: {channels: 24, handoffs: [{chunk: 512KiB, time: 60us}]}}")
        measured = measured.replace(nics, nics[:-1] + ", nccl_ring: {channels: 16, handoffs: "
                                    "[{slice: 64KiB, time: 30us}]}, nccl_tree: {channels: 16, handoffs: "
                                    "[{chunk: 512KiB, time: 90us}]}, nccl_ring_ll128: {channels: 16, handoffs: "
                                    "[{step: 144000, time: 40us}]}, nccl_tree_ll128: {channels: 16, handoffs: "
                                    "[{chunk: 288000, time: 70us}]}}")
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "m.yaml"), "w") as f:
                f.write(measured)
            r3 = strata("hw", "show", os.path.join(tmp, "m.yaml"))
            # The simulator's table says which measured tables it may charge; a preset's says nothing.
            r4 = strata("sim", "collective", "--hw", os.path.join(tmp, "m.yaml"), "--sizes", "1MiB")
            self.assertEqual(r4.rc, 0, r4)
            self.assertIn("# measured NCCL tables, charged where they apply (docs/fidelity.md §6.3, §6.4, §6.6): "
                          "node.fabric.nccl_ring, node.fabric.nccl_ring_ll128, node.nics.nccl_ring, "
                          "node.nics.nccl_ring_ll128, node.nics.nccl_tree, node.nics.nccl_tree_ll128, "
                          "node.fabric.nccl_tree\n", r4.out)
        r5 = strata("sim", "collective", "--hw", path, "--sizes", "1MiB")
        self.assertEqual(r5.rc, 0, r5)
        self.assertNotIn("measured NCCL tables", r5.out)
        self.assertEqual(r3.rc, 0, r3)
        self.assertIn("nccl ring    24 channels, measured time per slice handoff (node.fabric.nccl_ring): "
                      "32.00 KiB in 20.00 us, 1.00 MiB in 500.00 us", r3.out)
        self.assertIn("nccl net     16 ring channels over whole nodes, measured time per slice handoff between "
                      "nodes (node.nics.nccl_ring): 64.00 KiB in 30.00 us", r3.out)
        self.assertIn("nccl tree    16 tree channels over whole nodes, measured time per chunk between nodes "
                      "(node.nics.nccl_tree): 512.00 KiB in 90.00 us", r3.out)
        self.assertIn("nccl ll128   24 channels, measured time per LL128 step by payload "
                      "(node.fabric.nccl_ring_ll128): 562.50 KiB in 21.00 us", r3.out)
        self.assertIn("nccl net128  16 ring channels over whole nodes, measured time per LL128 step between nodes "
                      "(node.nics.nccl_ring_ll128): 140.62 KiB in 40.00 us", r3.out)
        self.assertIn("nccl tree128 16 tree channels over whole nodes, measured time per LL128 chunk between nodes "
                      "(node.nics.nccl_tree_ll128): 281.25 KiB in 70.00 us", r3.out)
        self.assertIn("nccl chain   24 tree channels on one node, measured time per chunk through its chain "
                      "(node.fabric.nccl_tree): 512.00 KiB in 60.00 us", r3.out)

    def test_hw_show_emulated_cluster_of_two_nodes_of_two_ranks(self):
        # Regression (issue 14): on 2 nodes x 2 GPUs `hw show` printed a sample route to GPU gpus_per_node + 2 = 4,
        # one past the last GPU, and crashed. The system is an emulated cluster as `strata validate cluster up`
        # writes one. Its sample routes end at GPUs 1 (same node), 2 (first of node 1) and 3 (node 1's other).
        # A nics link's latency is NIC to NIC, half on each side of the bridge (docs/hardware.md), and PCIe adds
        # 0 here: a route between nodes takes 250 us; the shared-memory wire 3 us.
        yaml = """name: emulated
gpu: host-cpu
nodes: {nodes}
node:
  gpus: {gpus}
  fabric: {fabric}
  host: {{cpus: 1, pcie: {{kind: pcie4, latency: 0 us}}}}
  nics: {{count: 1, link: {{kind: tcp-veth, bandwidth: 1Gbit/s, efficiency: 1, latency: 250 us}}}}
network: {{wiring: fat-tree}}
"""
        shm = "{wiring: fully-connected, link: {kind: shm, bandwidth: 40000 MB/s, efficiency: 1, latency: 3 us}}"
        with tempfile.TemporaryDirectory() as d:
            path = write_text(os.path.join(d, "emulated.yaml"), yaml.format(nodes=2, gpus=2, fabric=shm))
            r = strata("hw", "show", path)
            self.assertEqual(r.rc, 0, r)
            self.assertRegex(r.out, r"= 4 GPUs")
            routes = dict(((int(a), int(b)), lat) for a, b, lat in
                          re.findall(r"^    gpu (\d+) -> gpu (\d+): .*latency ([0-9.]+ (?:ns|us))\)$", r.out, re.M))
            self.assertEqual(routes, {(0, 1): "3.00 us", (0, 2): "250.00 us", (1, 3): "250.00 us"}, r)
            # Three GPUs per node: the cross-node sample still goes to node 1's third GPU (1 -> 3 + 2 = 5).
            path3 = write_text(os.path.join(d, "emulated3.yaml"), yaml.format(nodes=2, gpus=3, fabric=shm))
            r3 = strata("hw", "show", path3)
            self.assertEqual(r3.rc, 0, r3)
            self.assertRegex(r3.out, r"(?m)^    gpu 1 -> gpu 5: ", r3)
            # One GPU per node: no intra-node or second cross-node sample, and no crash.
            path1 = write_text(os.path.join(d, "emulated1.yaml"),
                               yaml.format(nodes=2, gpus=1, fabric="{wiring: none}"))
            r1 = strata("hw", "show", path1)
            self.assertEqual(r1.rc, 0, r1)
            self.assertEqual(re.findall(r"^    gpu (\d+) -> gpu (\d+):", r1.out, re.M), [("0", "1")], r1)


class SimCollective(unittest.TestCase):
    def test_table_structure_and_nccl_tests_definitions(self):
        for op, n_factor in [("allreduce", lambda n: 2 * (n - 1) / n), ("allgather", lambda n: (n - 1) / n),
                             ("reducescatter", lambda n: (n - 1) / n), ("broadcast", lambda n: 1.0)]:
            r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--op", op, "--sizes",
                       "1KiB:64MiB:8", "--dtype", "fp32")
            self.assertEqual(r.rc, 0, r)
            rows, header, avg = parse_collective_table(r.out)
            self.assertEqual([row["size"] for row in rows], sizes_of(1024, 64 * 2**20, 8))
            n = 8
            for row in rows:
                # nccl-tests (doc/PERFORMANCE.md): algbw = size / time; busbw = algbw * factor(n); count in elements,
                # per rank for allgather/reducescatter.
                per_rank = op in ("allgather", "reducescatter")
                self.assertEqual(row["count"], row["size"] / 4 / (n if per_rank else 1), row["line"])
                self.assertEqual(row["type"], "fp32")
                self.assertAlmostEqual(row["algbw"], row["size"] / (row["time_us"] * 1e-6) / 1e9,
                                       delta=0.006 + 0.001 * row["algbw"], msg=row["line"])
                self.assertAlmostEqual(row["busbw"], row["algbw"] * n_factor(n), delta=0.011 + 0.001 * row["busbw"],
                                       msg=row["line"])
            self.assertAlmostEqual(avg, sum(r_["busbw"] for r_ in rows) / len(rows), delta=0.01)

    def test_ring_allreduce_on_one_dgx_a100_matches_the_closed_form(self):
        path = src("configs/hw/dgx-a100.yaml")
        n = int(yaml_scalar(path, "gpus"))
        links = int(yaml_scalar(path, "links_per_gpu"))
        self.assertEqual(yaml_scalar(path, "link"), "nvlink3")
        # NVLink3: 25 GB/s per direction per link, of which NCCL reaches 20 GB/s (0.8; docs/fidelity.md).
        per_link = float(re.search(r"^  nvlink3 .*effective\s+([0-9.]+) GB/s", strata("hw", "list").out, re.M).group(1)) * 1e9
        self.assertEqual(per_link, 20e9)
        B = links * per_link
        r = strata("sim", "collective", "--hw", path, "--op", "allreduce", "--algo", "ring", "--protocol", "simple",
                   "--sizes", "8B:4GiB:16")
        self.assertEqual(r.rc, 0, r)
        rows, _, _ = parse_collective_table(r.out)
        self.assertEqual(len(rows), len(sizes_of(8, 4 * 2**30, 16)))
        latency_us = NCCL_RING_SIMPLE_BASE_US + 2 * (n - 1) * NCCL_RING_SIMPLE_NVLINK_HOP_US
        for row in rows:
            expected_us = latency_us + 2 * (n - 1) / n * row["size"] / B * 1e6
            self.assertAlmostEqual(row["time_us"], expected_us, delta=0.01 + 1e-3 * expected_us, msg=row["line"])
            self.assertEqual((row["algo"], row["proto"]), ("ring", "simple"))

    def test_sim_algorithms_lists_what_sim_collective_accepts(self):
        r = strata("sim", "algorithms")
        self.assertEqual(r.rc, 0, r)
        names = [l.split()[0] for l in r.out.splitlines() if l.strip()]
        for name in ["ring", "tree", "direct", "hierarchical", "nvls"]:
            self.assertIn(name, names)
        help_text = strata("sim", "collective", "--help").out
        for name in names:
            self.assertIn(name, help_text)
            run = strata("sim", "collective", "--hw", src("configs/hw/dgx-h100.yaml"), "--algo", name, "--sizes",
                         "1MiB")
            self.assertNotIn("unknown algorithm", run.err, run)

    def test_documented_errors(self):
        # Sizes (util/parse.h, docs/hardware.md section 6): an unknown unit names the option and the one size rule.
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--sizes", "64Q:8GiB")
        self.assertEqual(r.rc, 2, r)
        self.assertRegex(r.err, r"^strata: error: --sizes: .*'64Q'")
        self.assertIn("powers of 1024", r.err)
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--op", "foo")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("unknown collective 'foo'", r.err)
        self.assertIn("allreduce", r.err)
        # Issue 11: sweeps that never end or have empty rows are refused up front.
        for sizes, why in [("8B:8GiB:1.0000001", "more than the limit"), ("1e308TiB:1e308TiB", "is not a size"),
                           ("0.4B", "not a whole number of bytes")]:
            r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--sizes", sizes, timeout=60)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(why, r.err)
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--algo", "nosuch")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("nosuch", r.err)


# The "small 8 x H100 file" of docs/hardware.md section 6 (its line:column numbers refer to this layout).
H100_NODE = """name: t
gpu: h100-sxm
node:
  gpus: 8
  fabric: {wiring: switch, switch: nvswitch3, link: nvlink4, links_per_gpu: 18}
  host: {cpus: 2, pcie_switches: 4, pcie: pcie5, cpu_link: shm}
  nics: {count: 8, link: ib-ndr}
network: {wiring: rail-optimized}
"""

# How each documented defect is made from H100_NODE: (old, new) replacements; "$DIR" = a directory.
HW_DEFECTS = {
    "unknown-key.yaml": [("links_per_gpu: 18}", "links_per_gpu: 18, lanes: 4}")],
    "missing-field.yaml": [(", links_per_gpu: 18}", "}")],
    "bad-levels.yaml": [("  gpus: 8\n", "  gpus: 8\n  levels: [{name: a, count: 2}, {name: b, count: 3}]\n")],
    "no-network.yaml": [("network: {wiring: rail-optimized}\n", "nodes: 4\n")],
    "no-nics.yaml": [("  nics: {count: 8, link: ib-ndr}\n", ""), ("network:", "nodes: 2\nnetwork:")],
    "bad-link-key.yaml": [("link: ib-ndr}", "link: {kind: ib-ndr, speed: 4}}")],
    "bad-link.yaml": [("link: ib-ndr}", "link: ib-hdrx}")],
    "bad-gpu.yaml": [("gpu: h100-sxm", "gpu: h100-pcie")],
    "bad-wiring.yaml": [("wiring: switch", "wiring: torus")],
    "no-unit.yaml": [("link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 400}}")],
    "wrong-unit.yaml": [("link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 400 Gb}}")],
    "gpu-no-unit.yaml": [("gpu: h100-sxm", "gpu: {model: h100-sxm, hbm_bandwidth: 3350}")],
    "dup.yaml": [("  gpus: 8\n", "  gpus: 8\n  gpus: 8\n")],
    "quote.yaml": [("name: t", 'name: "dgx')],
    "big.yaml": [("gpus: 8", "gpus: 4294967304")],
    "slow.yaml": [("link: ib-ndr}", "link: {kind: ib-ndr, latency: 1e300 s}}")],
    "empty.yaml": [(H100_NODE, "")],
}


def documented_hw_errors():
    """(file, message) of every row of the table in docs/hardware.md section 6."""
    text = read_text(src("docs/hardware.md"))
    section = text[text.index("## 6. Error messages"):]
    section = section[:section.index("\n## ", 5)] if "\n## " in section[5:] else section
    return re.findall(r"^\|[^|]*\| `([^`:]+)(?::\d+:\d+)?: (.*)` \|$", section, re.M), section


def doc_message_regex(message):
    """The documented message as a regex: '(...)' and ', ..., ' stand for omitted text."""
    pattern = re.escape(message)
    pattern = pattern.replace(re.escape("(...)"), r"\(.*\)").replace(re.escape(", ..., "), ", .*, ")
    return pattern


class ValidateNcclTests(unittest.TestCase):
    """`strata validate nccl-tests` on logs in nccl-tests' format (src/util.cu's printf layout; times made up)."""

    @staticmethod
    def log(hosts, rows, program="all_reduce_perf"):
        lines = ["# nccl-tests version 2.13.9 nccl-headers=22105 nccl-library=22105",
                 f"# Collective test starting: {program}", "#", "# Using devices"]
        for n, host in enumerate(hosts):
            for d in range(8):
                lines.append(f"#  Rank {8 * n + d:2d} Group  0 Pid {1000 + d:6d} on {host:>10s} device {d:2d} "
                             f"[0000:{d:02x}:00] NVIDIA H100 80GB HBM3")
        lines += ["#", "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time"
                  "   algbw   busbw  #wrong"]
        for size, us in rows:
            size = int(size)
            lines.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {us:7.2f}    1.00    1.00       0  "
                         f"{us:7.2f}    1.00    1.00       0")
        return "\n".join(lines) + "\n"

    def test_measured_beside_sim_collective_with_the_error_per_size_and_band(self):
        # Measured times 1.25 x the ones `sim collective` prints for 2 DGX H100: strata's busbw is 25% above the
        # measured one at every size (to the 0.1 us the table prints), on the 16 GPUs of 2 nodes.
        hw = src("configs/hw/dgx-h100.yaml")
        sim = strata("sim", "collective", "--hw", hw, "--nodes", "2", "--sizes", "1MiB:1GiB:4")
        self.assertEqual(sim.rc, 0, sim)
        rows, _, _ = parse_collective_table(sim.out)
        with tempfile.TemporaryDirectory() as d:
            path = write_text(os.path.join(d, "h100.txt"),
                              self.log(["node1", "node2"], [(row["size"], row["time_us"] * 1.25) for row in rows]))
            out = os.path.join(d, "out")
            r = strata("validate", "nccl-tests", "--hw", hw, "--log", path, "--output", out)
            self.assertEqual(r.rc, 0, r)
            self.assertIn("all_reduce_perf, NCCL 2.21.5), 16 ranks on 2 host(s)", r.out)
            self.assertIn("on dgx-h100 (2 node(s) x 8 GPUs)", r.out)
            data = [line.split() for line in r.out.splitlines() if line.strip() and line.startswith(" ")]
            self.assertEqual([int(x[0]) for x in data], [row["size"] for row in rows])
            for x, row in zip(data, rows):
                self.assertAlmostEqual(float(x[3]), row["time_us"], delta=0.06)
                self.assertAlmostEqual(float(x[7].rstrip("%")), 25.0, delta=0.2, msg=x)
            band = re.search(r">= 64 MiB\s+mean \|error\| ([0-9.]+)%.* \((\d+) sizes\)", r.out)
            self.assertTrue(band, r.out)
            self.assertAlmostEqual(float(band.group(1)), 25.0, delta=0.2)
            self.assertEqual(int(band.group(2)), 3)  # 64 MiB, 256 MiB, 1 GiB
            for f in ("comparison.csv", "curves.csv", "summary.md"):
                self.assertTrue(os.path.isfile(os.path.join(out, f)), f)
            with open(os.path.join(out, "comparison.csv")) as f:
                self.assertEqual(len(f.read().splitlines()), 1 + len(rows))

    def test_experiment_kind_reports_every_log_against_the_goal(self):
        # Two logs on 2 DGX H100: times 1.05 x and 1.25 x `sim collective`'s, so strata's busbw is 5% and 25% above
        # the measured at every size: issue 13's goal (<= 10% from 64 MiB) met on the first, missed on the second.
        hw = src("configs/hw/dgx-h100.yaml")
        sim = strata("sim", "collective", "--hw", hw, "--nodes", "2", "--sizes", "16MiB:1GiB:4")
        rows, _, _ = parse_collective_table(sim.out)
        with tempfile.TemporaryDirectory() as d:
            for name, factor in (("close.txt", 1.05), ("far.txt", 1.25)):
                write_text(os.path.join(d, name),
                           self.log(["n1", "n2"], [(row["size"], row["time_us"] * factor) for row in rows]))
            exp = write_text(os.path.join(d, "check.yaml"), f"""experiment: check
description: two made-up logs
kind: nccl-tests-comparison
logs:
  - {{log: close.txt, hw: {hw}, label: close}}
  - {{log: far.txt, hw: {hw}}}
""")
            r = strata("run", exp, "--output", os.path.join(d, "results"), "--no-plots")
            self.assertEqual(r.rc, 0, r)
            md = read_text(os.path.join(d, "results", "check", "summary.md"))
            close = re.search(r"^\| close \| - \| ([0-9.]+)% \(1\) \| ([0-9.]+)% \(3\) \| \+([0-9.]+)% \| met \|$", md, re.M)
            far = re.search(r"^\| far.txt \| - \| ([0-9.]+)% \(1\) \| ([0-9.]+)% \(3\) \| \+([0-9.]+)% \| missed \|$", md,
                            re.M)
            self.assertTrue(close and far, md)
            for m, want in ((close, 5.0), (far, 25.0)):
                for g in m.groups():
                    self.assertAlmostEqual(float(g), want, delta=0.2)
            self.assertIn("Goal met on 1 of 2 logs with sizes from 64 MiB.", md)
            with open(os.path.join(d, "results", "check", "comparison.csv")) as f:
                self.assertEqual(len(f.read().splitlines()), 1 + 2 * len(rows))
            # A bad log is named with the experiment file's line and field and the log's own line.
            write_text(os.path.join(d, "far.txt"), self.log(["n1", "n2"], []) + "1048576 262144 float\n")
            r = strata("run", exp, "--output", os.path.join(d, "results"), "--no-plots")
            self.assertEqual(r.rc, 2, r)
            self.assertIn("check.yaml:6:11: logs[1].log: ", r.err)
            self.assertIn("far.txt:23: expected an nccl-tests row", r.err)

    def test_errors_name_the_log_and_what_was_expected(self):
        hw = src("configs/hw/dgx-h100.yaml")
        with tempfile.TemporaryDirectory() as d:
            good = write_text(os.path.join(d, "good.txt"), self.log(["a", "b"], [(2**20, 100.0)]))
            bad = write_text(os.path.join(d, "bad.txt"),
                             self.log(["a", "b"], []) + "     1048576        262144     float\n")
            three = write_text(os.path.join(d, "three.txt"), self.log(["a", "b", "c"], [(2**20, 100.0)]))
            unnamed = write_text(os.path.join(d, "unnamed.txt"), self.log(["a", "b"], [(2**20, 100.0)], program=""))
            for args, want in (
                    (["--log", good, "--op", "allgather"], f"--op 'allgather': {good} ran allreduce"),
                    (["--log", good, "--place", "sideways"], "--place 'sideways': expected out or in"),
                    (["--log", good, "--algo", "warp"], "--algo: unknown algorithm 'warp' (expected auto, best or one of"),
                    (["--log", bad], f"{bad}:23: expected an nccl-tests row of at least 10 columns"),
                    (["--log", three, "--nodes", "2"], "the log's ranks run on 3 hosts, the system has 2 node(s)"),
                    (["--log", unnamed], f"{unnamed} does not say which collective it ran (no '# Collective test "
                                         "starting:' line); give --op"),
                    (["--log", os.path.join(d, "none.txt")], "none.txt")):
                r = strata("validate", "nccl-tests", "--hw", hw, *args)
                self.assertEqual(r.rc, 2, r)
                self.assertIn(want, r.err)
            # Without --output nothing is written; --nodes 4 takes 2 of the system's 4 nodes.
            r = strata("validate", "nccl-tests", "--hw", hw, "--log", good, "--nodes", "4")
            self.assertEqual(r.rc, 0, r)
            self.assertIn("(4 node(s) x 8 GPUs)", r.out)
            self.assertEqual(sorted(os.listdir(d)), ["bad.txt", "good.txt", "three.txt", "unnamed.txt"])


class HwYamlErrors(unittest.TestCase):
    """docs/hardware.md section 6: each documented message, made on the documented file, with its line:column,
    exit status 2."""

    def test_base_file_is_valid(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("hw", "show", write_text(os.path.join(d, "t.yaml"), H100_NODE))
            self.assertEqual(r.rc, 0, r)

    def test_documented_messages(self):
        rows, section = documented_hw_errors()
        self.assertGreaterEqual(len(rows), 12)
        checked = 0
        for name, message in rows:
            if name.startswith("--"):
                continue  # command-line options, checked in SimCollective
            with tempfile.TemporaryDirectory() as d:
                if name.startswith("/"):  # "a directory instead of a file"
                    path, where = d, re.escape(d)
                    message = message.replace(name, d)
                else:
                    self.assertIn(name, HW_DEFECTS, f"docs/hardware.md documents {name}; add how to make it")
                    text = H100_NODE
                    for old, new in HW_DEFECTS[name]:
                        self.assertIn(old, text, name)
                        text = text.replace(old, new, 1)
                    path = write_text(os.path.join(d, name), text)
                    where = re.escape(path)
                    # The documented line; the column is only checked to be there (the docs' files may space
                    # flow mappings differently).
                    line = re.search(rf"`{re.escape(name)}(?::(\d+):\d+)?: ", section).group(1)
                    if line:
                        where += rf":{line}:\d+"
                r = strata("hw", "show", path)
                self.assertEqual(r.rc, 2, r)
                self.assertRegex(r.err.rstrip("\n"), rf"^strata: error: {where}: {doc_message_regex(message)}$", name)
                checked += 1
        self.assertGreaterEqual(checked, 12)

    def test_missing_file(self):
        r = strata("hw", "show", "/nonexistent/dir/none.yaml")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("/nonexistent/dir/none.yaml", r.err)


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

# Published parameter counts: torchvision resnet50 (25,557,032) and BERT-base-uncased incl. pooler (109,482,240).
PUBLISHED_PARAMS = {"resnet50": 25_557_032, "bert-base": 109_482_240}


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

TRUE_AND_FALSE_RULES = """rule comm (x: 2x4, y: 2x4)
  ewadd(x,y) == ewadd(y,x)
rule wrong (x: 2x4, y: 2x4)
  ewadd(x,y) == ewmul(x,y)
"""


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


# --- run ---------------------------------------------------------------------------------------------------------

SMALL_SWEEP = """experiment: {name}
description: a small sweep for the CLI tests
kind: collective-sweep
op: allreduce
sizes: 1MiB:16MiB:4
algorithms: [auto, ring]
systems:
  - hw: {hw}
  - hw: {hw}
    nodes: 2
    label: two nodes
"""
LONG_SIZES = "sizes: 1KiB:1GiB:1.02"


class RunExperiment(unittest.TestCase):
    def write(self, d, name, text):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_fidelity_curves_cover_every_preset(self):
        # docs/fidelity.md §3.8 and issue 13 promise curves from 1 MiB to 16 GiB for every preset: every file of
        # configs/hw/ is a system of configs/experiments/fidelity_curves.yaml, and its run has a row per system
        # and size (8 sizes: 1 MiB x 4^k up to 16 GiB), each with nccl-tests' bus bandwidth relation.
        presets = sorted(f[:-5] for f in os.listdir(src("configs/hw")) if f.endswith(".yaml"))
        text = read_text(src("configs/experiments/fidelity_curves.yaml"))
        named = sorted(set(re.findall(r"hw: \.\./hw/([a-z0-9-]+)\.yaml", text)))
        self.assertEqual(named, presets)
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", src("configs/experiments/fidelity_curves.yaml"), "--output", d, "--no-plots")
            self.assertEqual(r.rc, 0, r)
            rows = list(csv.DictReader(io.StringIO(read_text(os.path.join(d, "fidelity_curves", "collectives.csv")))))
        systems = len(re.findall(r"^  - hw:", text, re.M))
        sizes = sizes_of(2**20, 16 * 2**30, 4)
        self.assertEqual(len(sizes), 8)
        self.assertEqual(len(rows), systems * len(sizes))
        self.assertEqual(sorted({r["system"].split(" x")[0] for r in rows}), presets)
        for row in rows:
            n = int(row["gpus"])
            self.assertAlmostEqual(float(row["busbw_GBps"]), float(row["algbw_GBps"]) * 2 * (n - 1) / n,
                                   delta=2e-3 + 1e-3 * float(row["busbw_GBps"]))

    def test_small_sweep_results(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "hw"))
            import shutil
            shutil.copy(src("configs/hw/dgx-a100.yaml"), os.path.join(d, "hw", "a.yaml"))
            os.makedirs(os.path.join(d, "exp"))
            exp = self.write(os.path.join(d, "exp"), "s.yaml", SMALL_SWEEP.format(name="small", hw="../hw/a.yaml"))
            # Run from an unrelated directory: the hw path is relative to the experiment file.
            r = strata("run", exp, "--output", os.path.join(d, "out"), "--no-plots", cwd="/")
            self.assertEqual(r.rc, 0, r)
            out = os.path.join(d, "out", "small")
            self.assertEqual(sorted(os.listdir(out)), ["collectives.csv", "summary.md"])
            self.assertEqual(os.listdir(os.path.join(d, "out")), ["small"])  # no staging folder left behind
            rows = list(csv.DictReader(io.StringIO(read_text(os.path.join(out, "collectives.csv")))))
            sizes = sizes_of(2**20, 16 * 2**20, 4)
            self.assertEqual(len(rows), 2 * 2 * len(sizes))  # systems x algorithms x sizes
            self.assertEqual(list(rows[0].keys()),
                             ["system", "nodes", "gpus", "op", "algorithm_requested", "algorithm", "protocol", "bytes",
                              "time_us", "algbw_GBps", "busbw_GBps"])
            for row in rows:
                n = int(row["gpus"])
                self.assertEqual(n, 8 * int(row["nodes"]))
                self.assertAlmostEqual(float(row["algbw_GBps"]), float(row["bytes"]) / float(row["time_us"]) / 1e3,
                                       delta=1e-3 + 1e-3 * float(row["algbw_GBps"]))
                self.assertAlmostEqual(float(row["busbw_GBps"]), float(row["algbw_GBps"]) * 2 * (n - 1) / n,
                                       delta=2e-3 + 1e-3 * float(row["busbw_GBps"]))
            self.assertEqual({row["system"] for row in rows}, {"dgx-a100 x1", "two nodes"})
            summary = read_text(os.path.join(out, "summary.md"))
            self.assertTrue(summary.startswith("# small\n"))
            self.assertEqual(summary.count("\n| dgx-a100 x1 |") + summary.count("\n| two nodes |"), 4)
            # A second run replaces the set as a whole.
            r = strata("run", exp, "--output", os.path.join(d, "out"), "--no-plots")
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(os.listdir(os.path.join(d, "out")), ["small"])

    def test_every_shipped_experiment_is_valid(self):
        files = shipped_experiments()
        self.assertIn(src("configs/experiments/repro/p2.yaml"), files)  # the folders are walked too
        for f in files:
            with tempfile.TemporaryDirectory() as d:
                r = strata("run", "--check", f, "--output", d, cwd=d)
                self.assertEqual(r.rc, 0, r)
                self.assertIn(f"valid {yaml_scalar(f, 'kind')} experiment", r.out)
                self.assertEqual(os.listdir(d), [])  # --check writes nothing

    def test_directory_instead_of_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", d, "--output", os.path.join(d, "out"))
            self.assertEqual(r.rc, 2, r)
            self.assertIn(f"{d}: is a directory", r.err)

    def test_shipped_quickstart_from_another_directory(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", src("configs/experiments/quickstart.yaml"), "--output", d, "--no-plots", cwd=d)
            self.assertEqual(r.rc, 0, r)
            self.assertTrue(os.path.isfile(os.path.join(d, "quickstart", "collectives.csv")))

    def test_name_with_quotes_and_a_figure(self):
        with tempfile.TemporaryDirectory() as d:
            text = SMALL_SWEEP.format(name="it's \"quoted\"", hw=src("configs/hw/dgx-a100.yaml"))
            exp = self.write(d, "q.yaml", text.replace("name", "name"))
            r = strata("run", exp, "--output", d)
            self.assertEqual(r.rc, 0, r)
            out = os.path.join(d, "it's \"quoted\"")
            self.assertTrue(os.path.isfile(os.path.join(out, "summary.md")), r)
            summary = read_text(os.path.join(out, "summary.md"))
            if "could not be drawn" not in summary:  # matplotlib present: the PNG is in the set
                with open(os.path.join(out, "busbw.png"), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_parallel_sweep_writes_the_set_and_reports_progress(self):
        with tempfile.TemporaryDirectory() as d:
            r = strata("run", src("configs/experiments/parallel_small.yaml"), "--output", d, cwd=d)
            self.assertEqual(r.rc, 0, r)
            out = os.path.join(d, "parallel_small")
            summary = read_text(os.path.join(out, "summary.md"))
            files = ["plans.csv", "summary.md"]
            if "could not be drawn" not in summary:  # matplotlib present: the three figures are in the set
                files += ["breakdown.png", "memory.png", "step_time.png"]
                for png in ("breakdown.png", "memory.png", "step_time.png"):
                    with open(os.path.join(out, png), "rb") as f:
                        self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertEqual(sorted(os.listdir(out)), sorted(files))
            self.assertEqual(os.listdir(d), ["parallel_small"])
            # Progress on stderr: one header per size, one line per family; nothing but the result on stdout.
            self.assertIn("[1/2] 1 nodes (8 GPUs), global batch 16\n", r.err)
            self.assertIn("[2/2] 2 nodes (16 GPUs), global batch 16\n", r.err)
            self.assertEqual(r.out, f"results written to {out}/\n")
            rows = list(csv.DictReader(io.StringIO(read_text(os.path.join(out, "plans.csv")))))
            self.assertEqual(len(rows), 2 * 5)  # node counts x (3 built-in + 2 explicit families)
            for row in rows:
                if row["status"] == "ok":  # tokens/s = global batch x sequence / step time
                    self.assertAlmostEqual(float(row["tokens_per_s"]), 16 * 1024 / float(row["step_s"]), delta=0.1)

    def check_error(self, text, pattern, files=None):
        with tempfile.TemporaryDirectory() as d:
            for name, content in (files or {}).items():
                self.write(d, name, content)
            exp = self.write(d, "e.yaml", text)
            r = strata("run", exp, "--output", os.path.join(d, "out"), "--no-plots")
            self.assertEqual(r.rc, 2, r)
            self.assertRegex(r.err, "^strata: error: " + re.escape(exp) + pattern, r)
            self.assertFalse(os.path.exists(os.path.join(d, "out", "bad")), "nothing written on a bad file")

    def test_errors_name_file_line_and_field(self):
        hw = src("configs/hw/dgx-a100.yaml")
        good = SMALL_SWEEP.format(name="bad", hw=hw)
        self.check_error(good.replace(hw, "no/such.yaml"), r":8:9: systems\[0\]\.hw: cannot open 'no/such.yaml'")
        self.check_error(good.replace("kind: collective-sweep", "kind: sweep"),
                         r":3:7: kind: unknown experiment kind 'sweep' \(expected one of: collective-sweep, ")
        self.check_error(good + "sizez: 3\n", r":\d+:1: sizez: unknown field")
        self.check_error(good.replace("sizes: 1MiB:16MiB:4", "sizes: 1MiB:16:4"), r":5:8: sizes: .*'1MiB:16:4'")
        self.check_error(good.replace("experiment: bad", "experiment: ."), r":1:13: experiment: expected a plain name")
        self.check_error(good.split("systems:")[0] + "systems: []\n", r":7:10: systems: expected at least one system")
        self.check_error(good.replace("op: allreduce", "op: allsum"), r":4:5: op: unknown collective 'allsum'")
        self.check_error(good.replace("[auto, ring]", "[auto, rung]"), r":6:20: algorithms\[1\]: unknown algorithm 'rung'")
        self.check_error(good.replace("nodes: 2", "nodes: 0"), r":10:12: systems\[1\]\.nodes: ")
        self.check_error(good.replace("experiment: bad", "experiment: ../bad"), r":1:13: experiment: expected a plain name")
        # The optimizers' minimum gain (docs/subst.md), a percentage.
        subst = (f"experiment: bad\ndescription: x\nkind: subst-optimizers\nhw: {hw}\n"
                 f"rules: {src('configs/subst/taso_shipped_verified.rules')}\nmodels:\n  - {{name: squeezenet}}\n")
        self.check_error(subst + "min_gain: 101\n", r":8:11: min_gain: expected a percentage in 0\.\.100")
        self.check_error(subst + "min_gain: -1\n", r":8:11: min_gain: expected a percentage in 0\.\.100")
        # An error inside the hardware file it names: both places are reported.
        self.check_error(good.replace(hw, "broken.yaml"),
                         r":8:9: systems\[0\]\.hw: in the hardware description it names: .*broken\.yaml:\d+:\d+: ",
                         files={"broken.yaml": "name: x\nnode:\n  gpus: 8\n"})


class RunInterrupted(unittest.TestCase):
    """Issue 11: a killed `strata run` leaves the previous result set as it was and no staging folder behind.
    SIGINT and SIGTERM remove the staging folder at once (exit status 130 / 143, one line on stderr); SIGKILL
    cannot be handled, so the next run of the same experiment removes the folder, but never one that a live
    run holds. A long run (a sweep over many sizes) is killed once its staging folder exists."""

    NAME = "killed"

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.out = os.path.join(self.d, "out")
        hw = src("configs/hw/dgx-h100.yaml")
        self.short = write_text(os.path.join(self.d, "short.yaml"), SMALL_SWEEP.format(name=self.NAME, hw=hw))
        # The same experiment name, thousands of sizes on 2 and 16 nodes: runs for many seconds.
        long_text = SMALL_SWEEP.format(name=self.NAME, hw=hw).replace("sizes: 1MiB:16MiB:4", LONG_SIZES)
        self.long = write_text(os.path.join(self.d, "long.yaml"), long_text.replace("nodes: 2", "nodes: 16"))

    def tearDown(self):
        self.tmp.cleanup()

    def complete_run(self):
        r = strata("run", self.short, "--output", self.out, "--no-plots")
        self.assertEqual(r.rc, 0, r)
        return r

    def result_set(self):
        folder = os.path.join(self.out, self.NAME)
        return {f: read_text(os.path.join(folder, f)) for f in sorted(os.listdir(folder))}

    def staging_folders(self):
        return [f for f in os.listdir(self.out) if f.startswith(f".{self.NAME}.partial-")]

    def start_long_run(self):
        """Starts the long run (SIGINT not ignored, whatever ctest's parent did) and returns once its staging
        folder exists; returns the process and the folder's name."""
        proc = subprocess.Popen([STRATA, "run", self.long, "--output", self.out, "--no-plots"], cwd=self.d,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        before = set(self.staging_folders()) if os.path.isdir(self.out) else set()
        while time.monotonic() < deadline:
            new = set(self.staging_folders()) - before if os.path.isdir(self.out) else set()
            if new:
                return proc, new.pop()
            if proc.poll() is not None:
                self.fail(f"the long run ended (rc {proc.returncode}) before its staging folder was seen: "
                          f"{proc.communicate()}")
            time.sleep(0.01)
        proc.kill()
        self.fail("no staging folder within 120 s")

    def check_handled_signal(self, sig, status):
        self.complete_run()
        before = self.result_set()
        proc, _ = self.start_long_run()
        time.sleep(0.2)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, status, err)
        dest = os.path.join(self.out, self.NAME)
        # Progress lines ("[1/4] ...") may come first; the interrupt is one line, the last.
        self.assertTrue(err.endswith("\n"), err)
        self.assertEqual(err.splitlines()[-1], f"strata: interrupted by {sig.name}; '{dest}' was left as it was")
        self.assertEqual([line for line in err.splitlines() if not re.match(r"\[\d+/\d+\] ", line)],
                         [err.splitlines()[-1]])
        self.assertEqual(out, "")
        self.assertEqual(os.listdir(self.out), [self.NAME])  # no staging folder left
        self.assertEqual(self.result_set(), before)

    def test_sigint(self):
        self.check_handled_signal(signal.SIGINT, 130)

    def test_sigterm(self):
        self.check_handled_signal(signal.SIGTERM, 143)

    def test_sigint_before_any_result_leaves_nothing(self):
        os.makedirs(self.out)
        proc, _ = self.start_long_run()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130)
        self.assertEqual(os.listdir(self.out), [])

    def test_sigkill_then_the_next_run_cleans_up(self):
        self.complete_run()
        before = self.result_set()
        proc, staging = self.start_long_run()
        proc.kill()
        proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        self.assertEqual(sorted(os.listdir(self.out)), sorted([self.NAME, staging]))  # SIGKILL cannot be handled
        self.assertEqual(self.result_set(), before)
        r = self.complete_run()
        self.assertIn(f"note: removed '{os.path.join(self.out, staging)}', left by an interrupted run", r.err)
        self.assertEqual(os.listdir(self.out), [self.NAME])

    def test_a_live_runs_staging_folder_is_kept(self):
        proc, staging = self.start_long_run()
        try:
            self.complete_run()  # a second run of the same experiment while the long one is going on
            self.assertEqual(sorted(os.listdir(self.out)), sorted([self.NAME, staging]))
            self.assertIsNone(proc.poll())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 143)
        self.assertEqual(os.listdir(self.out), [self.NAME])


class OutputPathsRefusedFirst(unittest.TestCase):
    """Issue 11 re-check: an output path that is a folder, or in a folder that does not exist, is refused with
    the path named before any work is done (optimize, subst verify and subst generate used to run the whole
    search or proof first and fail only when writing)."""

    def check(self, args, bad):
        r = strata(*args)
        self.assertEqual(r.rc, 2, r)
        self.assertTrue(r.err.startswith(f"strata: error: {bad}: cannot write: "), r)
        self.assertEqual(r.out, "", r)  # nothing was computed or printed
        self.assertEqual(r.err.count("\n"), 1, r)  # no progress lines either

    def test_each_output_option(self):
        hw = src("configs/hw/dgx-a100.yaml")
        rules = src("configs/subst/taso_shipped_verified.rules")
        with tempfile.TemporaryDirectory() as d:
            missing = os.path.join(d, "no", "such.json")
            for bad in (d, missing):
                self.check(["optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "-o", bad], bad)
                self.check(["optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "--listing", bad], bad)
                self.check(["subst", "verify", rules, "--no-z3", "--json", bad], bad)
                self.check(["subst", "verify", rules, "--no-z3", "-o", bad], bad)
                self.check(["subst", "generate", "--ops", "relu", "--max-ops", "1", "-o", bad], bad)
            self.assertEqual(os.listdir(d), [])  # no stray <path>.tmp


# --- after the fixes of other issue-10 changes -------------------------------------------------------------------

class SizesAfterFix(unittest.TestCase):
    """Issue 10 defect 2: plain integers are bytes; K/M/G are powers of 1024 as in nccl-tests."""

    def table_sizes(self, sizes):
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--sizes", sizes)
        self.assertEqual(r.rc, 0, r)
        return [row["size"] for row in parse_collective_table(r.out)[0]]

    def test_plain_bytes_and_kmg(self):
        self.assertEqual(self.table_sizes("1048576:1073741824"), sizes_of(2**20, 2**30, 2))
        self.assertEqual(self.table_sizes("1k:4k"), [1024, 2048, 4096])
        self.assertEqual(self.table_sizes("1M:1G:32"), sizes_of(2**20, 2**30, 32))
        r = strata("sim", "collective", "--hw", src("configs/hw/dgx-a100.yaml"), "--sizes", "1Q")
        self.assertEqual(r.rc, 2, r)
        self.assertRegex(r.err, r"K.*M.*G")

    def test_help_states_the_rule(self):
        self.assertRegex(strata("sim", "collective", "--help").out, r"(?i)1024")


class TunerAfterFix(unittest.TestCase):
    """Issue 10 defect 4: the tuner's simulated time is within 10% of the best algorithm's it chooses from:
    auto among NCCL's algorithms (ring, tree, nvls, nvls-tree), best among all, strata's own direct and
    hierarchical schedules included."""

    NCCL = ["ring", "tree", "nvls", "nvls-tree"]
    ALL = NCCL + ["direct", "hierarchical"]

    def times(self, hw, nodes, size, group=None):
        args = ["sim", "collective", "--hw", src(hw), "--nodes", str(nodes), "--sizes", size]
        if group:
            args += ["--group", group]
        times = {}
        for algo in ["auto", "best"] + self.ALL:
            r = strata(*args, "--algo", algo)
            if r.rc == 0:
                table = parse_collective_table(r.out)[0][0]
                times[algo] = (table["time_us"], r.out)
        return times

    def test_cases_of_the_issue(self):
        for hw, nodes, size, group in [("configs/hw/dgx1-v100.yaml", 1, "1MiB", None),
                                       ("configs/hw/dgx-a100.yaml", 2, "512KiB", None),
                                       ("configs/hw/dgx-h100.yaml", 2, "1MiB", None),
                                       ("configs/hw/dgx-a100.yaml", 2, "256MiB", None),
                                       ("configs/hw/dgx-h100.yaml", 1, "64MiB", "0-3")]:
            t = self.times(hw, nodes, size, group)
            case = (hw, nodes, size, group)
            best_nccl = min(t[a][0] for a in self.NCCL if a in t)
            best_all = min(t[a][0] for a in self.ALL if a in t)
            self.assertLessEqual(t["auto"][0], 1.10 * best_nccl, case)
            self.assertLessEqual(t["best"][0], 1.10 * best_all, case)
            # auto never names one of strata's own schedules for these all-reduces.
            self.assertNotRegex(t["auto"][1], r"\b(direct|hierarchical)\b", case)


class TrainDtypesAfterFix(unittest.TestCase):
    """Issue 10 defect 1: every zoo model trains at f32, f16 and bf16 (here the failing BERT-base)."""

    def test_bert_trains_at_every_dtype(self):
        for dtype in ["f32", "f16", "bf16"]:
            r = strata("model", "sim", "bert-base", "--hw", src("configs/hw/dgx-a100.yaml"), "--train", "--dtype", dtype)
            self.assertEqual(r.rc, 0, r)
            self.assertIn("training step", r.out)


class MixedPrecisionMemoryAfterFix(unittest.TestCase):
    """Issue 10 defect 8: mixed-precision Adam keeps f16 weights + f32 master weights + two f32 moments."""

    def test_resnet50_f16_adam(self):
        n = PUBLISHED_PARAMS["resnet50"]
        r = strata("model", "sim", "resnet50", "--hw", src("configs/hw/dgx-a100.yaml"), "--train", "--dtype", "f16")
        self.assertEqual(r.rc, 0, r)
        m = re.search(r"parameters ([0-9.]+) MiB \+ optimizer state ([0-9.]+) MiB", r.out)
        self.assertAlmostEqual(float(m.group(1)) + float(m.group(2)), n * (2 + 4 + 8) / 2**20, delta=0.02)


class SubstVerifyAfterFix(unittest.TestCase):
    """Issue 10 defect 10: `subst verify` fails (non-zero exit) when a rule is false."""

    def test_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tf.rules")
            write_text(path, TRUE_AND_FALSE_RULES)
            r = strata("subst", "verify", path)
            self.assertNotIn(r.rc, (0, 2), r)
            write_text(path, TRUE_AND_FALSE_RULES.split("rule wrong")[0])
            r = strata("subst", "verify", path)
            self.assertEqual(r.rc, 0, r)


class OptimizeCostAfterFix(unittest.TestCase):
    """Issue 10 defect 6: the written graph, simulated by `model sim`, costs what `optimize` predicted."""

    def test_written_graph_costs_the_prediction(self):
        hw = src("configs/hw/dgx-a100.yaml")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "sq.onnx")
            r = strata("optimize", "--model", "squeezenet", "--hw", hw, "--no-check", "-o", out)
            self.assertEqual(r.rc, 0, r)
            after = float(re.search(r"predicted time after:\s+([0-9.]+) ms", r.out).group(1))
            sim = strata("model", "sim", out, "--hw", hw, "--dtype", "f32")
            self.assertEqual(sim.rc, 0, sim)
            step = float(re.search(r"step time: ([0-9.]+) us", sim.out).group(1)) / 1e3
            self.assertAlmostEqual(step, after, delta=1e-4 + 1e-3 * after)


class OptimizeCheckAfterFix(unittest.TestCase):
    """Issue 10 defect 7: the equality check prints a verdict (pass/fail, max relative error, tolerance)."""

    def test_verdict(self):
        r = strata("optimize", "--model", "squeezenet", "--hw", src("configs/hw/dgx-a100.yaml"))
        self.assertEqual(r.rc, 0, r)
        check = next(l for l in r.out.splitlines() if l.startswith("check"))
        self.assertRegex(check, r"(?i)\bpass\b")
        self.assertRegex(check, r"(?i)relative error")
        self.assertRegex(check, r"(?i)tolerance")


class CollectiveDetailsAfterFix(unittest.TestCase):
    """Issue 10 defect 10: strict rank lists, 1-GPU groups, sendrecv without --group, no directories created by
    --trace, no table header before an error, aligned columns at >= 10,000 us."""

    hw = property(lambda self: src("configs/hw/dgx-a100.yaml"))

    def test_strict_group(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0,1x,2y", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--group", r.err)
        self.assertEqual(r.out, "")  # no header before the error

    def test_one_gpu_group_moves_no_bytes(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0", "--sizes", "1GiB")
        self.assertEqual(r.rc, 0, r)
        row = parse_collective_table(r.out)[0][0]
        self.assertEqual(row["busbw"], 0.0)  # nccl-tests: busbw factor 2(n-1)/n = 0 for one rank
        # Nothing crosses a link; at most a local copy, which cannot beat the GPU's memory bandwidth (hw list).
        hbm = float(re.search(r"^  a100-sxm4-80gb .* ([0-9.]+) GB/s$", strata("hw", "list").out, re.M).group(1))
        self.assertLessEqual(row["algbw"], hbm, row["line"])

    def test_sendrecv_without_group(self):
        r = strata("sim", "collective", "--hw", self.hw, "--op", "sendrecv", "--sizes", "1MiB")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(parse_collective_table(r.out)[0]), 1)

    def test_trace_into_missing_directory(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "missing", "x.json")
            r = strata("sim", "collective", "--hw", self.hw, "--sizes", "1MiB", "--trace", path)
            self.assertEqual(r.rc, 2, r)
            self.assertFalse(os.path.exists(os.path.join(d, "missing")))

    def test_nodes_zero_message_is_short(self):
        r = strata("sim", "collective", "--hw", self.hw, "--nodes", "0")
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("--nodes", r.err)
        self.assertLess(len(r.err), 300, r)

    def test_columns_stay_aligned_for_long_times(self):
        r = strata("sim", "collective", "--hw", self.hw, "--op", "allreduce", "--algo", "ring", "--sizes", "1GiB:8GiB:8")
        self.assertEqual(r.rc, 0, r)
        rows, header, _ = parse_collective_table(r.out)
        self.assertGreaterEqual(max(row["time_us"] for row in rows), 10000)
        names = next(l for l in header if "busbw" in l)
        for col in ["time", "algbw", "busbw"]:
            end = names.index(col) + len(col)
            for row in rows:
                value = row["line"][:end].split()[-1]
                self.assertTrue(row["line"][end:end + 1] in (" ", ""), (col, row["line"]))
                float(value)

class RankAndChannelLimits(unittest.TestCase):
    """Issue 11: inputs that grew without bound are refused up front with the limit. --group expanded a range
    into a list before checking it against the system (0-2147483647 looped past INT_MAX); --channels 1000000
    built a million rings."""

    hw = property(lambda self: src("configs/hw/dgx-a100.yaml"))  # 8 GPUs

    def test_group_range_beyond_the_system(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0-2147483647", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--group: rank 2147483647 is outside 0..7", r.err)
        self.assertEqual(r.out, "")

    def test_group_backwards_or_repeated(self):
        r = strata("sim", "collective", "--hw", self.hw, "--group", "5-3", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("runs backwards", r.err)
        r = strata("sim", "collective", "--hw", self.hw, "--group", "0-3,2", "--sizes", "1MiB")
        self.assertEqual(r.rc, 2, r)
        self.assertIn("rank 2 is listed twice", r.err)

    def test_channels_limit(self):
        r = strata("sim", "collective", "--hw", self.hw, "--channels", "1000000", "--sizes", "1MiB")
        self.assertNotEqual(r.rc, 0, r)
        self.assertIn("--channels", r.err)
        self.assertIn("0..32", r.err)
        r = strata("sim", "collective", "--hw", self.hw, "--channels", "32", "--sizes", "1MiB")
        self.assertEqual(r.rc, 0, r)


def main():
    global STRATA, SOURCE
    parser = argparse.ArgumentParser()
    parser.add_argument("--strata", required=True)
    parser.add_argument("--source", required=True)
    args, rest = parser.parse_known_args()
    STRATA, SOURCE = os.path.abspath(args.strata), os.path.abspath(args.source)
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
