"""strata.load_system and System against `strata hw show`; hierarchy sizes against the YAML."""
import re

import pytest
import strata

from conftest import cli, src


def test_show_is_what_hw_show_prints():
    for path, nodes in [("configs/hw/dgx-a100.yaml", 0), ("configs/hw/dgx-h100.yaml", 2)]:
        system = strata.load_system(src(path), nodes=nodes)
        args = ["hw", "show", src(path)] + (["--nodes", nodes] if nodes else [])
        r = cli(*args)
        assert r.rc == 0, r
        assert system.show() == r.out


def test_sizes_match_the_yaml_and_the_cli_hierarchy():
    path = src("configs/hw/dgx-h100.yaml")
    text = open(path).read()
    gpus_per_node = int(re.search(r"^\s*gpus:\s*(\d+)", text, re.M).group(1))
    system = strata.load_system(path, nodes=4)
    assert system.gpus_per_node == gpus_per_node
    assert system.nodes == 4
    assert system.num_gpus == 4 * gpus_per_node
    product = 1
    for level in system.levels:
        product *= level["count"]
    assert product == system.num_gpus
    # The CLI's hierarchy view lists the same levels.
    out = cli("hw", "show", path, "--nodes", 4).out
    listed = re.findall(r"^  (\S+)\s+x (\d+)$", out, re.M)
    assert [(l["name"], l["count"]) for l in system.levels] == [(n, int(c)) for n, c in listed]
    assert system.gpu["name"] in out


def test_route_within_an_nvlink_node():
    # DGX A100: 12 NVLink3 links per GPU through NVSwitches, 20 GB/s effective each (hw list): 240 GB/s.
    system = strata.load_system(src("configs/hw/dgx-a100.yaml"))
    assert system.route_bandwidth_Bps(0, 1) == pytest.approx(12 * 20e9)
    with pytest.raises(strata.Error, match="rank 8 is not a GPU"):
        system.route_bandwidth_Bps(0, 8)


def test_errors_carry_the_cli_message():
    for args, call in [
        (["hw", "show", "/nonexistent.yaml"], lambda: strata.load_system("/nonexistent.yaml")),
        (["hw", "show", src("configs/hw/dgx-a100.yaml"), "--nodes", "0"],
         lambda: strata.load_system(src("configs/hw/dgx-a100.yaml"), nodes=-1)),
    ]:
        message = cli(*args).error_message()
        with pytest.raises(strata.Error) as e:
            call()
        if "--nodes" in args:  # the CLI names the value it read
            assert str(e.value) == message.replace("'0'", "'-1'")
        else:
            assert str(e.value) == message
        assert isinstance(e.value, Exception)
