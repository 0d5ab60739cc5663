"""strata.collective / collective_array against `strata sim collective`, and ring all-reduce against its closed
form (NCCL's ring latency constants and the link bandwidth of the hardware YAML)."""
import math

import pytest
import strata

from conftest import cli, src

COLUMNS = ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "algo", "proto"]


def parse_table(text):
    rows = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        assert len(f) == len(COLUMNS), line
        rows.append(dict(zip(COLUMNS, f)))
    return rows


def time_digits(us):  # nccl-tests' precision rule, as the CLI prints
    return 0 if us >= 1e4 else (1 if us >= 100 else 2)


CASES = [
    dict(path="configs/hw/dgx-a100.yaml", op="allreduce", algo="auto", sizes="8B:1GiB:32"),
    dict(path="configs/hw/dgx-h100.yaml", nodes=2, op="allgather", algo="ring", sizes="1MiB:256MiB:4"),
    dict(path="configs/hw/dgx-h100.yaml", op="reducescatter", algo="ring", protocol="ll128", sizes="64KiB:16MiB:8",
         dtype="bf16", group="0-3"),
    dict(path="configs/hw/dgx-a100.yaml", op="reduce", sizes="1KiB:1MiB:32"),  # root column 0
]


@pytest.mark.parametrize("case", CASES)
def test_rows_match_the_cli_table(case):
    case = dict(case)
    path, nodes = src(case.pop("path")), case.pop("nodes", 0)
    rows = strata.collective(path, nodes=nodes, **case)
    args = ["sim", "collective", "--hw", path]
    if nodes:
        args += ["--nodes", nodes]
    for k, v in case.items():
        args += ["--" + k, v]
    r = cli(*args)
    assert r.rc == 0, r
    table = parse_table(r.out)
    assert len(rows) == len(table)
    for row, t in zip(rows, table):
        assert f"{row['size_bytes']:.0f}" == t["size"]
        assert f"{row['count_elements']:.0f}" == t["count"]
        assert (row["type"], row["redop"], str(row["root"])) == (t["type"], t["redop"], t["root"])
        assert f"{row['time_us']:.{time_digits(row['time_us'])}f}" == t["time"]
        assert f"{row['algbw_GBps']:.2f}" == t["algbw"]
        assert f"{row['busbw_GBps']:.2f}" == t["busbw"]
        assert (row["algorithm"], row["protocol"]) == (t["algo"], t["proto"])


def test_nccl_rating_is_nccls_own_predicted_time():
    # NCCL 2.21's tuner on one DGX H100, by hand (tests/sim_nccl_tuner_test.cc): 1 MiB ring/LL, 15 us of latency
    # + 1 MiB at min(141, 360 x 0.5) x 8/14 GB/s; strata's own schedule `direct` has no rating.
    rows = strata.collective(src("configs/hw/dgx-h100.yaml"), sizes="1MiB", nccl_rating=True)
    assert (rows[0]["algorithm"], rows[0]["protocol"]) == ("ring", "ll")
    assert rows[0]["nccl_time_us"] == pytest.approx(15 + 2**20 / (141e9 * 8 / 14) * 1e6, abs=0.01)
    direct = strata.collective(src("configs/hw/dgx-h100.yaml"), sizes="1MiB", algo="direct", nccl_rating=True)
    assert direct[0]["nccl_time_us"] is None
    assert "nccl_time_us" not in strata.collective(src("configs/hw/dgx-h100.yaml"), sizes="1MiB")[0]


def test_ring_allreduce_matches_the_closed_form():
    # One DGX A100: 8 GPUs, 12 NVLink3 links per GPU at 20 GB/s effective (configs/hw/dgx-a100.yaml, hw list).
    # NCCL's ring/Simple latency (src/graph/tuning.cc): 8.4 us base + 3.4 us per NVLink hop, 2(n-1) hops.
    n, bandwidth = 8, 12 * 20e9
    rows = strata.collective(src("configs/hw/dgx-a100.yaml"), op="allreduce", algo="ring", protocol="simple",
                             sizes="1MiB:4GiB:16")
    assert len(rows) == 1 + int(math.log(4096, 16))
    for row in rows:
        s = row["size_bytes"]
        expected_us = 8.4 + 2 * (n - 1) * 3.4 + 2 * (n - 1) / n * s / bandwidth * 1e6
        assert row["time_us"] == pytest.approx(expected_us, rel=1e-3, abs=0.01)
        # nccl-tests' definitions (doc/PERFORMANCE.md): algbw = size / time, busbw = algbw * 2(n-1)/n.
        assert row["algbw_GBps"] == pytest.approx(s / (row["time_us"] * 1e-6) / 1e9, rel=1e-9)
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * (n - 1) / n, rel=1e-9)
        assert row["count_elements"] == s / 4  # fp32
    # Large messages approach the link bandwidth.
    assert rows[-1]["busbw_GBps"] == pytest.approx(bandwidth / 1e9, rel=0.01)


def test_numpy_array_has_the_table_fields():
    np = pytest.importorskip("numpy")
    system = strata.load_system(src("configs/hw/dgx-a100.yaml"))
    rows = strata.collective(system, algo="ring", sizes="1KiB:1MiB:4")
    a = strata.collective_array(system, algo="ring", sizes="1KiB:1MiB:4")
    assert a.dtype.names == tuple(name for name, _ in strata.TABLE_FIELDS)
    assert len(a) == len(rows)
    np.testing.assert_array_equal(a["size_bytes"], [r["size_bytes"] for r in rows])
    np.testing.assert_array_equal(a["busbw_GBps"], [r["busbw_GBps"] for r in rows])
    assert list(a["algorithm"]) == [r["algorithm"] for r in rows]


@pytest.mark.parametrize("option,value", [("op", "foo"), ("algo", "nope"), ("protocol", "fast"),
                                          ("sizes", "64Q:8GiB"), ("dtype", "int3"), ("group", "0,1x"),
                                          ("granularity", "coarse")])
def test_errors_carry_the_cli_message(option, value):
    path = src("configs/hw/dgx-a100.yaml")
    message = cli("sim", "collective", "--hw", path, "--" + option, value).error_message()
    with pytest.raises(strata.Error) as e:
        strata.collective(path, **{option: value})
    assert str(e.value) == message


def test_channels_out_of_range_is_refused_with_the_cli_message():
    path = src("configs/hw/dgx-a100.yaml")
    message = cli("sim", "collective", "--hw", path, "--channels", "33").error_message()
    with pytest.raises(strata.Error) as e:
        strata.collective(path, channels=33)
    assert str(e.value) == message


def test_threads_give_the_sequential_results():
    # The C++ work runs without the GIL, so a thread pool runs simulations side by side; each result equals the
    # one computed alone.
    from concurrent.futures import ThreadPoolExecutor
    system = strata.load_system(src("configs/hw/dgx-h100.yaml"), nodes=2)
    jobs = [dict(op=op, algo=algo, sizes="1MiB:64MiB:8") for op in ("allreduce", "allgather", "reducescatter")
            for algo in ("ring", "auto")]
    alone = [strata.collective(system, **j) for j in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda j: strata.collective(system, **j), jobs))
    assert together == alone
