"""strata.run_experiment / check_experiment against `strata run`: the same files, byte for byte, and the same
errors. Independently, the CSV's bus bandwidths follow nccl-tests' all-reduce factor 2(n-1)/n."""
import csv
import os

import pytest
import strata

from conftest import cli, src

EXPERIMENT = """experiment: {name}
description: A small all-reduce sweep for the Python API test.
kind: collective-sweep
op: allreduce
sizes: 1MiB:64MiB:8
dtype: fp32
algorithms: [ring, tree]
systems:
  - hw: {hw}
"""


def write_experiment(folder, name):
    path = os.path.join(folder, name + ".yaml")
    with open(path, "w") as f:
        f.write(EXPERIMENT.format(name=name, hw=src("configs/hw/dgx-a100.yaml")))
    return path


def files_of(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = f.read()
    return out


def test_outputs_match_strata_run(tmp_path):
    path = write_experiment(str(tmp_path), "py_small")
    assert strata.check_experiment(path) == {"kind": "collective-sweep", "name": "py_small"}
    folder = strata.run_experiment(path, output=str(tmp_path / "py"), plots=False)
    assert os.path.samefile(folder, tmp_path / "py" / "py_small")
    r = cli("run", path, "--output", tmp_path / "cli", "--no-plots")
    assert r.rc == 0, r
    ours, theirs = files_of(folder), files_of(str(tmp_path / "cli" / "py_small"))
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        if name.endswith(".csv"):
            assert ours[name] == theirs[name], name
    with open(os.path.join(folder, "collectives.csv")) as f:
        rows = list(csv.DictReader(f))
    assert rows
    for row in rows:
        assert float(row["busbw_GBps"]) == pytest.approx(float(row["algbw_GBps"]) * 2 * 7 / 8, rel=2e-3, abs=2e-3)


def test_errors_carry_the_cli_message(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: bad\nkind: collective-sweep\nop: allreduce\nsizes: 1Q\nsystems: []\n")
    message = cli("run", "--check", bad).error_message()
    with pytest.raises(strata.Error) as e:
        strata.check_experiment(str(bad))
    assert str(e.value) == message
    with pytest.raises(strata.Error) as e:
        strata.run_experiment(str(bad), output=str(tmp_path / "out"), plots=False)
    assert str(e.value) == message


def test_dry_run_matches_strata_run_dry_run(tmp_path):
    path = "configs/experiments/whatif_nic.yaml"
    text = strata.dry_run(path, output=str(tmp_path))
    r = cli("run", "--dry-run", path, "--output", tmp_path)
    assert r.rc == 0, r
    assert text == r.out
    # The file's sweep scales the NIC bandwidth by 1, 2 and 4: a grid of three points, none computed yet.
    points = [line.split() for line in text.splitlines()[2:]]
    assert [(p[0], p[1], p[3]) for p in points] == [("0", "missing", "1"), ("1", "missing", "2"),
                                                     ("2", "missing", "4")]
    assert len({p[2] for p in points}) == 3  # one store key per point
    path = "configs/experiments/quickstart.yaml"
    assert strata.dry_run(path) == cli("run", "--dry-run", path).out
    assert "not a sweep" in strata.dry_run(path)
