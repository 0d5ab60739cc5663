"""strata.optimize against `strata optimize`; the input graph's cost against the single-GPU simulation."""
import re

import pytest
import strata

from conftest import cli, src

HW = "configs/hw/dgx-a100.yaml"


def test_result_matches_the_cli():
    d = strata.optimize("squeezenet", src(HW), budget=50)
    r = cli("optimize", "--model", "squeezenet", "--hw", src(HW), "--budget", 50)
    assert r.rc == 0, r
    m = re.search(r"model (\S+): (\d+) nodes; (\d+) rules; device (\S+)", r.out)
    assert (d["model"], d["nodes_before"], d["rules"], d["device"]) == (m.group(1), int(m.group(2)),
                                                                         int(m.group(3)), m.group(4))
    assert f"{d['cost_before_seconds'] * 1e3:.4f}" == re.search(r"predicted time before: ([0-9.]+) ms", r.out).group(1)
    after = re.search(r"predicted time after:\s+([0-9.]+) ms \(([0-9.]+)x\), (\d+) -> (\d+) nodes", r.out)
    assert f"{d['cost_after_seconds'] * 1e3:.4f}" == after.group(1)
    assert f"{d['speedup']:.2f}" == after.group(2)
    assert d["nodes_after"] == int(after.group(4))
    search = re.search(r"search: (\d+) graphs explored, (\d+) generated", r.out)
    assert (d["explored"], d["generated"]) == (int(search.group(1)), int(search.group(2)))
    applied = re.findall(r"^  rule (\S+) at (.*)$", r.out, re.M)
    assert [(a["rule"], ", ".join(a["nodes"])) for a in d["applied"]] == applied
    verdict = re.search(r"check \(reference executor, random inputs seed 1\): (.*)$", r.out, re.M).group(1)
    assert d["check"] == verdict
    assert d["check_passed"]


def test_input_cost_is_the_single_gpu_simulation():
    # Independent path: the cost of the unoptimized graph is the simulated step of the same model (f32, batch 1);
    # the simulator's clock counts whole picoseconds.
    d = strata.optimize("squeezenet", src(HW), budget=1, check=False)
    sim = strata.simulate_model("squeezenet", src(HW), dtype="f32")
    assert d["cost_before_seconds"] == pytest.approx(sim["step_seconds"], rel=1e-6)
    assert d["cost_after_seconds"] <= d["cost_before_seconds"]
    assert d["nodes_before"] == strata.load_model("squeezenet").num_nodes
    assert "check" not in d


def test_errors_carry_the_cli_message():
    for kwargs, args in [(dict(xfers="nope"), ["--xfers", "nope"]),
                         (dict(rules="/nonexistent.rules"), ["--rules", "/nonexistent.rules"])]:
        message = cli("optimize", "--model", "squeezenet", "--hw", src(HW), *args).error_message()
        with pytest.raises(strata.Error) as e:
            strata.optimize("squeezenet", src(HW), **kwargs)
        assert str(e.value) == message


def test_output_and_listing_equal_the_cli_files(tmp_path):
    d = strata.optimize("squeezenet", src(HW), budget=20, check=False, output=str(tmp_path / "py.onnx"),
                        listing=str(tmp_path / "py.txt"))
    r = cli("optimize", "--model", "squeezenet", "--hw", src(HW), "--budget", 20, "--no-check", "--output",
            tmp_path / "cli.onnx", "--listing", tmp_path / "cli.txt")
    assert r.rc == 0, r
    for ext in ("onnx", "txt"):
        assert (tmp_path / f"py.{ext}").read_bytes() == (tmp_path / f"cli.{ext}").read_bytes()
    # The ONNX file holds the optimized graph (weight-only nodes folded): it loads with that many nodes or fewer.
    assert strata.load_model(str(tmp_path / "py.onnx")).num_nodes <= d["nodes_after"]
    bad = str(tmp_path / "missing" / "x.onnx")
    message = cli("optimize", "--model", "squeezenet", "--hw", src(HW), "--output", bad).error_message()
    with pytest.raises(strata.Error) as e:
        strata.optimize("squeezenet", src(HW), output=bad)
    assert str(e.value) == message


def test_min_gain_percent_matches_the_cli():
    # A minimum of 100% keeps the input whatever the search finds; the best graph found is reported.
    d = strata.optimize("squeezenet", src(HW), budget=20, check=False, min_gain_percent=100)
    r = cli("optimize", "--model", "squeezenet", "--hw", src(HW), "--budget", 20, "--no-check", "--min-gain", 100)
    assert r.rc == 0, r
    assert d["cost_after_seconds"] == d["cost_before_seconds"]
    assert d["applied"] == [] and d["nodes_after"] == d["nodes_before"]
    found = re.search(r"best graph found ([0-9.]+) ms", r.out).group(1)
    assert f"{d['declined_cost_seconds'] * 1e3:.4f}" == found
    assert strata.optimize("squeezenet", src(HW), budget=20, check=False)["declined_cost_seconds"] is None
    message = cli("optimize", "--model", "squeezenet", "--hw", src(HW), "--min-gain", 101).error_message()
    with pytest.raises(strata.Error) as e:
        strata.optimize("squeezenet", src(HW), min_gain_percent=101)
    assert str(e.value) == message
