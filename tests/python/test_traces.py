"""Chrome/Perfetto traces from Python (trace=...) against the CLI's --trace: the same bytes; bad paths refused
before any work with the CLI's message."""
import json

import pytest
import strata

from conftest import cli, src

A100 = "configs/hw/dgx-a100.yaml"
GPT = "transformer:layers=2,hidden=512,heads=8,vocab=1000,seq=256"


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_traces_equal_the_cli_traces(tmp_path):
    py, c = tmp_path / "py.json", tmp_path / "cli.json"
    strata.collective(src(A100), algo="ring", sizes="1MiB:16MiB:16", trace=py)
    assert cli("sim", "collective", "--hw", src(A100), "--algo", "ring", "--sizes", "1MiB:16MiB:16", "--trace",
               c).rc == 0
    assert read(py) == read(c)
    # One trace process per GPU of the system (8 on a DGX A100).
    names = {e["args"]["name"] for e in json.loads(read(py))["traceEvents"] if e.get("name") == "process_name"}
    assert {f"n0.gpu{i}" for i in range(8)} <= names

    strata.simulate_model("squeezenet", src(A100), batch=4, trace=str(py))
    assert cli("model", "sim", "squeezenet", "--hw", src(A100), "--batch", 4, "--trace", c).rc == 0
    assert read(py) == read(c)

    strata.simulate_step(GPT, src("configs/hw/dgx-h100.yaml"), global_batch=8, dp=4, tp=2, trace=str(py))
    assert cli("sim", "step", "--model", GPT, "--hw", src("configs/hw/dgx-h100.yaml"), "--global-batch", 8, "--dp", 4,
               "--tp", 2, "--trace", c).rc == 0
    assert read(py) == read(c)


def test_a_trace_into_a_missing_folder_is_refused_first(tmp_path):
    bad = str(tmp_path / "no" / "such" / "t.json")
    message = cli("sim", "collective", "--hw", src(A100), "--trace", bad).error_message()
    for call in [lambda: strata.collective(src(A100), trace=bad),
                 lambda: strata.simulate_model("squeezenet", src(A100), trace=bad),
                 lambda: strata.simulate_step(GPT, src("configs/hw/dgx-h100.yaml"), global_batch=8, dp=8, trace=bad)]:
        with pytest.raises(strata.Error) as e:
            call()
        assert str(e.value) == message
