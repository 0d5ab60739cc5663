"""strata.load_model / Model / simulate_model against `strata model show` and `strata model sim`; parameter
counts against published numbers and a closed form; the simulated step against the roofline bound."""
import re

import pytest
import strata

from conftest import cli, src

# Published parameter counts: torchvision resnet50 and BERT-base-uncased with its pooler.
PUBLISHED_PARAMS = {"resnet50": 25_557_032, "bert-base": 109_482_240}


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_parameter_counts_match_published_numbers(name):
    model = strata.load_model(name)
    assert model.parameters == PUBLISHED_PARAMS[name]
    assert model.summary()["parameters"] == PUBLISHED_PARAMS[name]


def test_transformer_parameters_follow_the_closed_form():
    # GPT-2-style decoder (layernorm, gelu, biases, learned positions, tied head): per layer 4h^2 + 4h (attention) + 8h^2 + 5h (MLP: h x 4h
    # and 4h x h with biases) + 4h (two layernorms) = 12h^2 + 13h; embeddings V*h + S*h; final layernorm 2h.
    L, h, V, S = 2, 64, 100, 16
    spec = (f"transformer:layers={L},hidden={h},heads=4,vocab={V},seq={S},act=gelu,norm=layernorm,"
            "positions=learned,bias=1,tied_embeddings=1")
    s = strata.load_model(spec).summary()
    assert s["transformer"].startswith(f"layers={L},hidden={h},")
    closed = L * (12 * h * h + 13 * h) + V * h + S * h + 2 * h
    assert s["parameters"] == closed
    assert s["transformer_parameters"] == closed


@pytest.mark.parametrize("ref,options", [("resnet50", []), ("bert-base", ["--batch", "2", "--seq", "64"]),
                                         ("transformer:layers=2,hidden=64,heads=4,vocab=100,seq=16", ["--nodes"])])
def test_show_is_what_model_show_prints(ref, options):
    nodes = "--nodes" in options
    batch = int(options[options.index("--batch") + 1]) if "--batch" in options else 0
    seq = int(options[options.index("--seq") + 1]) if "--seq" in options else 0
    model = strata.load_model(ref, batch=batch, seq=seq)
    r = cli("model", "show", ref, *options)
    assert r.rc == 0, r
    assert model.show(nodes=nodes) == r.out
    s = model.summary()
    assert f"nodes: {s['nodes']} " in r.out
    # Per-operator totals add up to the graph's.
    assert sum(o["count"] for o in s["operators"]) == s["nodes"] == model.num_nodes
    assert sum(o["flops"] for o in s["operators"]) == pytest.approx(s["forward_flops"])


def test_simulate_matches_model_sim_and_the_roofline_bound():
    hw = src("configs/hw/dgx-a100.yaml")
    for train in (False, True):
        d = strata.simulate_model("resnet50", hw, train=train, batch=8)
        r = cli("model", "sim", "resnet50", "--hw", hw, "--batch", 8, *(["--train"] if train else []))
        assert r.rc == 0, r
        assert d["text"] == r.out
        assert d["samples_per_second"] == pytest.approx(8 / d["step_seconds"])
        # No schedule beats the GPU's fp16 peak (A100: 312 TFLOP/s dense).
        assert d["step_seconds"] >= d["flops"] / 312e12
        assert sum(o["seconds"] for o in d["operators"]) >= d["step_seconds"] * 0.999  # one stream
        m = d["memory"]
        parts = m["parameters_bytes"] + m["optimizer_state_bytes"] + m["inputs_bytes"] + m["constants_bytes"]
        assert m["peak_bytes"] == pytest.approx(parts + m["transient_bytes"])
        assert (m["optimizer_state_bytes"] > 0) == train


def test_errors_carry_the_cli_message():
    for args, call in [
        (["model", "show", "nosuchmodel"], lambda: strata.load_model("nosuchmodel")),
        (["model", "show", "resnet50", "--dtype", "i8"], lambda: strata.load_model("resnet50", dtype="i8")),
        (["model", "sim", "resnet50", "--hw", src("configs/hw/dgx-a100.yaml"), "--gpu", "9"],
         lambda: strata.simulate_model("resnet50", src("configs/hw/dgx-a100.yaml"), gpu=9)),
        (["model", "sim", "resnet50", "--hw", src("configs/hw/dgx-a100.yaml"), "--train", "--optimizer", "lion"],
         lambda: strata.simulate_model("resnet50", src("configs/hw/dgx-a100.yaml"), train=True, optimizer="lion")),
    ]:
        message = cli(*args).error_message()
        with pytest.raises(strata.Error) as e:
            call()
        assert str(e.value) == message
