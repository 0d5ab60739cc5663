"""strata.simulate_step / parallelize against `strata sim step` / `strata parallelize --format json`, and against
formulas: Narayanan et al. SC'21's model FLOPs 72 B s L h^2 (1 + s/6h + V/12hL), MFU with the H100 SXM datasheet
peak (989.4 TFLOP/s dense bf16), ZeRO's 2 + 2 + 12 bytes per parameter (Rajbhandari et al. SC'20)."""
import json

import pytest
import strata

from conftest import assert_same_json, cli, src

HW = "configs/hw/dgx-h100.yaml"
GPT = "transformer:layers=4,hidden=1024,heads=16,vocab=32000,seq=1024"
L, H, V, S = 4, 1024, 32000, 1024


def test_step_matches_the_cli_json():
    for kwargs, args in [(dict(dp=8, micro_batch=2), ["--dp", 8, "--micro-batch", 2]),
                         (dict(tp=2, pp=2, dp=2, sequence_parallel=True, zero=1, recompute="selective"),
                          ["--tp", 2, "--pp", 2, "--dp", 2, "--sequence-parallel", "--zero", 1, "--recompute",
                           "selective"])]:
        d = strata.simulate_step(GPT, src(HW), global_batch=32, **kwargs)
        r = cli("sim", "step", "--model", GPT, "--hw", src(HW), "--global-batch", 32, "--format", "json", *args)
        assert r.rc == 0, r
        assert_same_json(d, json.loads(r.out))


def test_step_against_formulas():
    batch, gpus = 32, 8
    d = strata.simulate_step(GPT, src(HW), global_batch=batch, dp=gpus, micro_batch=2)
    flops = 72 * batch * S * L * H * H * (1 + S / (6 * H) + V / (12 * H * L))
    assert d["model_flops_per_step"] == pytest.approx(flops, rel=1e-9)
    assert d["mfu"] == pytest.approx(flops / (d["step_seconds"] * gpus * 989.4e12), rel=1e-6)
    assert d["tokens_per_second"] == pytest.approx(batch * S / d["step_seconds"], rel=1e-9)
    params = L * (12 * H * H + 13 * H) + (V + S) * H + 2 * H
    assert d["memory"]["weights_bytes"] == pytest.approx(2 * params, abs=1)
    assert d["memory"]["optimizer_bytes"] == pytest.approx(12 * params, abs=1)
    assert d["gpus"] == gpus and d["micro_batches"] == batch // (gpus * 2)


def test_parallelize_matches_the_cli_json():
    d = strata.parallelize(GPT, src(HW), global_batch=16, top=5)
    r = cli("parallelize", "--model", GPT, "--hw", src(HW), "--global-batch", 16, "--top", 5, "--format", "json")
    assert r.rc == 0, r
    assert_same_json(d, json.loads(r.out), skip=("search_seconds",))
    steps = [p["step_seconds"] for p in d["plans"]]
    assert len(steps) == 5 and steps == sorted(steps)
    for p in d["plans"]:
        assert p["tp"] * p["pp"] * p["dp"] * p["cp"] == 8
    # The search's space holds the data-parallel plans: its best is at least as fast.
    assert steps[0] <= d["data_parallel"]["step_seconds"] * (1 + 1e-9)


def test_mcmc_matches_the_cli_json():
    d = strata.parallelize("squeezenet", src("configs/hw/dgx-a100.yaml"), global_batch=64, search="mcmc",
                           proposals=300)
    r = cli("parallelize", "--model", "squeezenet", "--hw", src("configs/hw/dgx-a100.yaml"), "--global-batch", 64,
            "--search", "mcmc", "--proposals", 300, "--format", "json")
    assert r.rc == 0, r
    assert_same_json(d, json.loads(r.out), skip=("search_seconds", "wall_seconds"))
    # Data parallelism is in the plan space: the best plan is at least as fast; same seed, same plan.
    assert d["best"]["step_seconds"] <= d["data_parallel"]["step_seconds"] * (1 + 1e-9)
    assert d["gpus"] == 8 and "conv2d" in d["best"]["listing"]


def test_errors_carry_the_cli_message():
    base = ["sim", "step", "--model", GPT, "--hw", src(HW), "--global-batch", 32]
    for kwargs, args in [(dict(tp=3), ["--tp", 3]), (dict(recompute="some"), ["--recompute", "some"]),
                         (dict(dtype="fp32"), ["--dtype", "fp32"]), (dict(zero=4), ["--zero", 4]),
                         (dict(placement="[[1]]"), ["--placement", "[[1]]"])]:
        message = cli(*base, *args).error_message()
        with pytest.raises(strata.Error) as e:
            strata.simulate_step(GPT, src(HW), global_batch=32, **kwargs)
        assert str(e.value) == message
    for kwargs, args in [(dict(), []), (dict(search="annealing"), ["--search", "annealing"]),
                         (dict(search="mcmc", seq=16), ["--search", "mcmc", "--seq", 16])]:
        message = cli("parallelize", "--model", "resnet50", "--hw", src(HW), "--global-batch", 8, *args).error_message()
        with pytest.raises(strata.Error) as e:
            strata.parallelize("resnet50", src(HW), global_batch=8, **kwargs)
        assert str(e.value) == message
