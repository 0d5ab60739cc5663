"""strata.synthesize against `strata synth --format json`; placements checked by brute force."""
import itertools
import json

import pytest
import strata

from conftest import assert_same_json, cli, src

HW = "configs/hw/gcp-a100x16.yaml"


def test_records_match_the_cli_json():
    for kwargs, args in [
        (dict(nodes=4, axes="4,16", reduce="0", bytes="1GiB", algo="both", top=0),
         ["--nodes", 4, "--axes", "4,16", "--reduce", 0, "--bytes", "1GiB", "--algo", "both", "--top", 0]),
        (dict(nodes=2, axes="2,16", reduce="1", bytes="64MiB", top=3, all=True),
         ["--nodes", 2, "--axes", "2,16", "--reduce", 1, "--bytes", "64MiB", "--top", 3, "--all"]),
    ]:
        records = strata.synthesize(src(HW), **kwargs)
        r = cli("synth", "--hw", src(HW), "--format", "json", *args)
        assert r.rc == 0, r
        assert_same_json(records, json.loads(r.out))


def test_reduction_groups_partition_the_gpus():
    # 2 nodes x 16 GPUs, axes (2, 16), reducing axis 0: every placement splits the 32 GPUs into 16 groups of 2.
    records = strata.synthesize(src(HW), nodes=2, axes="2,16", reduce="0", bytes="16MiB", top=0)
    assert records
    for rec in records:
        groups = rec["reduction_groups"]
        assert sorted(len(g) for g in groups) == [2] * 16
        assert sorted(itertools.chain.from_iterable(groups)) == list(range(32))
        assert rec["best_seconds"] <= rec["allreduce_seconds"] * (1 + 1e-12)
        assert rec["speedup"] == pytest.approx(rec["allreduce_seconds"] / rec["best_seconds"])
    # Ranked fastest first.
    best = [rec["best_seconds"] for rec in records]
    assert best == sorted(best)


def test_joint_matches_the_cli_json():
    joint = ["0:1GiB", "1:128MiB"]
    records = strata.synthesize(src(HW), nodes=2, axes="2,16", joint=joint)
    r = cli("synth", "--hw", src(HW), "--nodes", 2, "--axes", "2,16", "--joint", joint[0], "--joint", joint[1],
            "--format", "json")
    assert r.rc == 0, r
    assert_same_json(records, json.loads(r.out))
    # A placement's cost is the sum of its reductions' best programs; placements ranked by it.
    for rec in records:
        assert [p["reduction"] for p in rec["reductions"]] == joint
        assert rec["total_best_seconds"] == pytest.approx(sum(p["best_seconds"] for p in rec["reductions"]))
        assert rec["total_allreduce_seconds"] == pytest.approx(sum(p["allreduce_seconds"] for p in rec["reductions"]))
    totals = [rec["total_best_seconds"] for rec in records]
    assert totals == sorted(totals)


def test_errors_carry_the_cli_message():
    for kwargs, args in [(dict(axes="4,x"), ["--axes", "4,x"]),
                         (dict(axes="4,8", reduce="2"), ["--axes", "4,8", "--reduce", "2"]),
                         (dict(axes="4,8", algo="nope"), ["--axes", "4,8", "--algo", "nope"]),
                         (dict(axes="4,8", bytes="1Q"), ["--axes", "4,8", "--bytes", "1Q"]),
                         (dict(axes="4,8", joint=["0-4GiB"]), ["--axes", "4,8", "--joint", "0-4GiB"]),
                         (dict(axes="4,8", joint=["2:4GiB"]), ["--axes", "4,8", "--joint", "2:4GiB"])]:
        message = cli("synth", "--hw", src(HW), "--nodes", 2, *args).error_message()
        with pytest.raises(strata.Error) as e:
            strata.synthesize(src(HW), nodes=2, **kwargs)
        assert str(e.value) == message
