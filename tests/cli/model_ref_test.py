#!/usr/bin/env python3
"""Golden-output tests of model references on the command line (issue 12): `strata model show|sim` with
`transformer:key=value,...` and model YAMLs. Expected parameter counts are computed here from the published
architecture formulas (GPT: 12 h^2 + 13 h per layer; grouped-query attention and SwiGLU written out), and the
published Mixtral 8x7B figures (46.7 B parameters, 12.9 B active; Jiang et al. 2024). Errors are checked for the
key, file, line and field they must name.

Run by ctest, one test per class:  model_ref_test.py --strata build/experiments/strata --source . ClassName
"""
import os
import re
import tempfile
import unittest

import cli_common
from cli_common import strata, src


def count_str(n):
    for scale, unit in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}"


def shown_params(out):
    m = re.search(r"nodes: \d+\s+parameters: ([0-9.]+ [KMGTP]?)", out)
    assert m, out
    return m.group(1)


class ModelReferences(unittest.TestCase):
    def test_transformer_text_gpt_shape(self):
        layers, h, vocab, seq = 2, 256, 1000, 128
        r = strata("model", "show", f"transformer:layers={layers},hidden={h},heads=4,vocab={vocab},seq={seq}")
        self.assertEqual(r.rc, 0, r)
        expected = layers * (12 * h * h + 13 * h) + (vocab + seq) * h + 2 * h  # tied head, final LayerNorm
        self.assertEqual(shown_params(r.out), count_str(expected))
        self.assertIn(f"input   input_ids                    i64[1,{seq}]", r.out)
        self.assertIn(f"output  lm_head                      f32[{seq},{vocab}]", r.out)
        self.assertIn("kv_heads=4", r.out)  # default: one key/value head per query head
        self.assertIn("ffn=1024", r.out)    # default: 4 h
        self.assertIn("attention", r.out)   # the fused operator is in the operator table

    def test_yaml_gqa_swiglu_file(self):
        h, heads, kv, f, vocab, seq = 64, 8, 2, 160, 100, 16
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tiny.yaml")
            with open(path, "w") as out:
                out.write(f"layers: 3\nhidden: {h}\nheads: {heads}\nkv_heads: {kv}\nffn: {f}\nvocab: {vocab}\n"
                          f"seq: {seq}\nact: swiglu\nnorm: rmsnorm\npositions: rope\nbias: 0\ntied_embeddings: 0\n")
            r = strata("model", "show", path)
            self.assertEqual(r.rc, 0, r)
            kv_dim = kv * h // heads
            layer = 2 * h * h + 2 * h * kv_dim + 3 * h * f + 2 * h  # q, out; k, v; gate, up, down; 2 RMSNorms
            expected = 3 * layer + vocab * h + h + vocab * h       # embedding; final norm; untied head
            self.assertEqual(shown_params(r.out), count_str(expected))
            self.assertIn("model: tiny", r.out)  # the file's name when the YAML has none

    def test_mixtral_yaml_matches_published_sizes(self):
        r = strata("model", "show", src("configs/models/mixtral-8x7b.yaml"), "--seq", "32")
        self.assertEqual(r.rc, 0, r)
        m = re.search(r"parameters: ([0-9.]+) G = .*active per token ([0-9.]+) G", r.out)
        self.assertIsNotNone(m, r)
        self.assertAlmostEqual(float(m.group(1)), 46.7, delta=0.05)
        self.assertAlmostEqual(float(m.group(2)), 12.9, delta=0.05)

    def test_sim_accepts_a_transformer(self):
        r = strata("model", "sim", "transformer:layers=1,hidden=128,heads=2,vocab=500,seq=64", "--hw",
                   src("configs/hw/dgx-a100.yaml"), "--train")
        self.assertEqual(r.rc, 0, r)
        self.assertIn("model: transformer (training step, adam, batch 1", r.out)

    def test_errors_name_key_file_line_field(self):
        base = "transformer:layers=2,hidden=256,heads=4,vocab=100,seq=16"
        cases = [
            (base + ",depth=1", "unknown key 'depth'"),
            ("transformer:layers=2,hidden=256,heads=4,vocab=100", "missing required key 'seq'"),
            (base + ",experts=4,top_k=8", "key 'top_k': top_k 8 exceeds the 4 experts"),
            (base + ",kv_heads=3", "key 'kv_heads'"),
            ("transformer:layers=2,hidden=256,heads=3,vocab=100,seq=16", "hidden 256 is not a multiple of heads 3"),
            (base + ",layers=3", "key 'layers' given twice"),
            ("transformer:layers=2,hidden=256,heads=4,vocab=100,seq=1.5", "key 'seq': expected an integer"),
        ]
        for text, message in cases:
            r = strata("model", "show", text)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(message, r.err)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.yaml")
            with open(path, "w") as out:
                out.write("layers: 2\nhidden: 256\nheads: 4\nvocab: 100\nseq: 16\nact: relu\n")
            r = strata("model", "show", path)
            self.assertEqual(r.rc, 2, r)
            self.assertIn(f"{path}:6:6: act: expected gelu or swiglu, got 'relu'", r.err)
            r = strata("model", "show", os.path.join(d, "missing.yaml"))
            self.assertEqual(r.rc, 2, r)
            self.assertIn("missing.yaml", r.err)


if __name__ == "__main__":
    cli_common.main()  # --strata/--source, then unittest on this module
