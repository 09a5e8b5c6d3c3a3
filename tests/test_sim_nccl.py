"""Simulated nccl-tests: the real 2.17 layout, the published bandwidth shapes, noise bands, faults."""

from __future__ import annotations

import random
import re
import statistics

import pytest

from acceptance.errors import UsageError
from acceptance.sim.model import ncclperf
from acceptance.sim.model.faults import Fabric
from acceptance.sim.model.ncclargs import parse_mpirun, parse_nccl_args
from acceptance.sim.model.nccltext import fstr
from acceptance.tools import nccl
from acceptance.units import parse_size
from tests.shared import CORPUS, needs_shared
from tests.test_sim_support import ALL_REDUCE, hosts_for, make_runner, mpirun_nccl, node_names

SAMPLE = CORPUS / "nccl" / "nccl-tests-2.17.8-allreduce-sendrecv-2node-smoke-inplace-NA.txt"
ROW = re.compile(r"^ {0,11}\d+  +\d+ +\w+ +\w+ +-?\d+( +\S+){8}$")


def _largest_busbw(text: str) -> float:
    run = nccl.parse_text(text).runs[0]
    busbw = run.rows[-1].oop.busbw
    assert busbw is not None
    return busbw


def test_same_seed_same_output_and_repeated_calls_differ() -> None:
    a, b = make_runner(seed=5), make_runner(seed=5)
    first = mpirun_nccl(a, node_names(2))
    assert first == mpirun_nccl(b, node_names(2))
    again = mpirun_nccl(a, node_names(2))
    assert again.stdout != first.stdout
    assert again == mpirun_nccl(b, node_names(2))


@needs_shared
def test_header_and_columns_match_the_real_2_17_8_layout() -> None:
    real = SAMPLE.read_text().splitlines()
    sim = mpirun_nccl(make_runner(), node_names(2)).stdout.splitlines()
    for marker in (
        "#                                                              out-of-place",
        "#       size",
        "#        (B)",
    ):
        assert next(line for line in sim if line.startswith(marker)) == next(
            line for line in real if line.startswith(marker)
        )
    real_row = next(line for line in real if ROW.match(line))
    sim_rows = [line for line in sim if ROW.match(line)]
    assert sim_rows
    assert all(len(line) == len(real_row) for line in sim_rows)
    # column ends line up with the real row's
    ends = [m.end() for m in re.finditer(r"\S+", real_row)]
    assert all([m.end() for m in re.finditer(r"\S+", line)] == ends for line in sim_rows)
    tail = sim[sim.index(next(line for line in sim if line.startswith("# Out of bounds"))) :]
    assert tail[0] == "# Out of bounds values : 0 OK"
    assert re.fullmatch(r"# Avg bus bandwidth    : [\d.]+ ", tail[1])
    assert tail[2:] == ["#", "# Collective test concluded: all_reduce_perf", "#", ""]
    assert any(line.startswith("# SIMULATED (recovery-acceptance sim, seed 1)") for line in sim)


def test_output_round_trips_through_the_project_parser() -> None:
    runner = make_runner()
    result = mpirun_nccl(runner, node_names(4))
    capture = nccl.parse_text(result.stdout)
    assert result.exit_code == 0
    assert capture.status == "ok"
    run = capture.runs[0]
    assert run.collective == "all_reduce"
    assert len(run.ranks) == 32
    assert {r.host for r in run.ranks} == {f"nccl-worker-{i}" for i in range(4)}
    assert run.nccl_tests_version == "2.17.8"
    busids = {g.busid for g in runner.cluster.nodes[0].gpus}
    assert {r.busid for r in run.ranks} == busids
    for row in run.rows:
        assert row.oop.time_us
        assert row.oop.algbw is not None
        assert row.oop.busbw is not None
        if row.oop.algbw > 1:
            assert row.oop.algbw == pytest.approx(row.size / row.oop.time_us / 1e3, rel=0.01)
            assert row.oop.busbw == pytest.approx(row.oop.algbw * 2 * 31 / 32, rel=0.01)


@pytest.mark.parametrize(
    ("collective", "factor"),
    [
        ("all_gather", 15 / 16),
        ("reduce_scatter", 15 / 16),
        ("alltoall", 15 / 16),
        ("broadcast", 1),
        ("sendrecv", 1),
    ],
)
def test_bus_factor_and_counts_per_collective(collective: str, factor: float) -> None:
    tool = [f"{collective}_perf", "-b", "32M", "-e", "1G", "-f", "2", "-d", "double"]
    run = nccl.parse_text(mpirun_nccl(make_runner(), node_names(2), tool).stdout).runs[0]
    assert run.collective == collective
    for row in run.rows:
        assert row.oop.busbw == pytest.approx((row.oop.algbw or 0) * factor, abs=0.02)
        if collective in ("all_gather", "reduce_scatter", "alltoall"):
            assert row.size == row.count * 16 * 8
    if collective in ("alltoall", "sendrecv"):
        assert all(row.ip.wrong is None for row in run.rows)


@pytest.mark.parametrize(("nodes", "low", "high"), [(1, 470, 490), (2, 360, 376), (16, 322, 338), (64, 292, 308)])
def test_healthy_large_size_busbw_stays_in_the_published_band_over_100_seeds(
    nodes: int, low: float, high: float
) -> None:
    args = parse_nccl_args(ALL_REDUCE)
    values = []
    for seed in range(100):
        rows = ncclperf.simulate_rows(
            args,
            nodes=nodes,
            ranks_per_node=8,
            env={},
            fabric=Fabric(),
            r=random.Random(seed),
            max_bytes=16 << 30,
        )
        big = rows[-1]
        values.append(big.size / (big.oop_us * 1e3) * ncclperf.bus_factor("all_reduce", nodes * 8))
    assert low <= min(values)
    assert max(values) <= high
    assert 0.002 < statistics.stdev(values) / statistics.mean(values) < 0.01


def test_small_sizes_are_latency_bound_and_noisier() -> None:
    args = parse_nccl_args(ALL_REDUCE)
    small, large = [], []
    for seed in range(60):
        rows = ncclperf.simulate_rows(
            args,
            nodes=16,
            ranks_per_node=8,
            env={},
            fabric=Fabric(),
            r=random.Random(seed),
            max_bytes=16 << 30,
        )
        small.append(rows[0].oop_us)
        large.append(rows[-1].oop_us)
    assert 20 < statistics.median(small) < 100
    assert statistics.stdev(small) / statistics.mean(small) > 3 * statistics.stdev(large) / statistics.mean(large)


def test_ring_single_node_and_nvls_differ() -> None:
    runner = make_runner()
    tool = ["all_reduce_perf", "-b", "1G", "-e", "16G", "-f", "2", "-g", "8"]
    nvls = _largest_busbw(runner.run(tool, {}, "sim-node-01", []).stdout)
    ring = _largest_busbw(runner.run(tool, {"NCCL_ALGO": "Ring"}, "sim-node-01", []).stdout)
    assert 470 < nvls < 490
    assert 355 < ring < 375


def test_nic_degraded_slows_only_runs_through_its_node() -> None:
    runner = make_runner(["nic-degraded@sim-node-07"])
    healthy = make_runner()
    bad = _largest_busbw(mpirun_nccl(runner, ["sim-node-06", "sim-node-07"]).stdout)
    good = _largest_busbw(mpirun_nccl(runner, ["sim-node-05", "sim-node-06"]).stdout)
    ref = _largest_busbw(mpirun_nccl(healthy, ["sim-node-05", "sim-node-06"]).stdout)
    assert bad < 0.8 * ref
    assert good == pytest.approx(ref, rel=0.03)
    single = runner.run(["all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "8"], {}, "sim-node-07", [])
    assert _largest_busbw(single.stdout) > 450


def test_spine_slow_hits_pairs_across_leaf_groups_not_one_node() -> None:
    runner = make_runner(["spine-slow"])
    ref = _largest_busbw(mpirun_nccl(make_runner(), ["sim-node-01", "sim-node-02"]).stdout)
    within = [
        _largest_busbw(mpirun_nccl(runner, [f"sim-node-{a:02d}", f"sim-node-{a + 1:02d}"]).stdout)
        for a in (1, 3, 9, 11)
    ]
    across = [
        _largest_busbw(mpirun_nccl(runner, [f"sim-node-{a:02d}", f"sim-node-{a + 8:02d}"]).stdout) for a in (1, 3, 5, 7)
    ]
    assert all(v == pytest.approx(ref, rel=0.03) for v in within)
    assert all(v < 0.8 * ref for v in across)


def test_link_flap_makes_some_runs_slow_and_others_not() -> None:
    runner = make_runner(["link-flap@sim-node-09"])
    values = [_largest_busbw(mpirun_nccl(runner, ["sim-node-09", "sim-node-10"]).stdout) for _ in range(12)]
    assert min(values) < 0.85 * 368
    assert max(values) > 0.95 * 360


def test_gpu_xid_fails_nccl_init_on_that_node_with_the_real_lines() -> None:
    result = mpirun_nccl(make_runner(["gpu-xid@sim-node-03:5"]), ["sim-node-02", "sim-node-03"])
    assert result.exit_code != 0
    lines = result.stdout.splitlines()
    assert "nccl-worker-1: Test CUDA failure common.cu:1008 'unknown error'" in lines
    assert any(re.fullmatch(r" \.\. nccl-worker-1 pid \d+: Test failure common.cu:1100", line) for line in lines)
    assert not any(line.startswith("# Out of bounds") for line in lines)
    assert "mpirun detected that one or more processes exited with non-zero status, thus causing" in lines
    capture = nccl.parse_text(result.stdout)
    assert capture.status != "ok"


def test_nccl_version_fault_changes_the_printed_library_version() -> None:
    text = mpirun_nccl(make_runner(["nccl-version"]), node_names(2)).stdout
    assert "nccl-headers=22703 nccl-library=22703" in text.splitlines()[0]


def test_nccl_debug_info_adds_foreign_lines_the_parser_ignores() -> None:
    result = mpirun_nccl(make_runner(), node_names(2), env={"NCCL_DEBUG": "INFO"})
    assert sum(" NCCL INFO " in line for line in result.stdout.splitlines()) >= 16 * 5
    capture = nccl.parse_text(result.stdout)
    assert capture.status == "ok"
    assert capture.runs[0].nccl_version == "2.26.5"


def test_memory_limit_reduces_max_bytes_like_the_real_tool() -> None:
    tool = ["all_reduce_perf", "-b", "16G", "-e", "64G", "-f", "2", "-g", "8"]
    text = make_runner().run(tool, {}, "sim-node-01", []).stdout
    assert "# Reducing maxBytes to 48247057066 due to memory limitation" in text.splitlines()
    assert nccl.parse_text(text).runs[0].rows[-1].size == 32 << 30


def test_duration_grows_with_the_sweep() -> None:
    runner = make_runner()
    short = mpirun_nccl(runner, node_names(2), ["all_reduce_perf", "-b", "8", "-e", "1M", "-f", "2"])
    long = mpirun_nccl(runner, node_names(2), ["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-n", "50"])
    assert 0 < short.duration_s < long.duration_s


def test_float_formatting_matches_nccl_tests_bounded_widths() -> None:
    assert [fstr(v, 7) for v in (182.87, 1581.1, 11591.04, 105854.2, 1.7e7)] == [
        " 182.87", "1581.10", "11591.0", " 105854", "1.7e+07",
    ]  # fmt: skip
    assert [fstr(v, 6) for v in (0.0, 40.07, 389.4, 1234.56)] == ["  0.00", " 40.07", "389.40", "1234.6"]


def test_argument_parsing() -> None:
    assert parse_size("16G") == 16 << 30
    assert parse_size("8") == 8
    args = parse_nccl_args(["/opt/nccl_tests/build/alltoall_perf_mpi", "-b", "1M", "-e", "1G", "-f", "2", "-g", "8"])
    assert (args.collective, args.ngpus, args.step_factor) == ("alltoall", 8, 2)
    launch = parse_mpirun(
        ["mpirun", "--mca", "btl", "^openib", "-np", "16", "-x", "NCCL_DEBUG=INFO", "all_reduce_perf"]
    )
    assert launch.np == 16
    assert launch.env == (("NCCL_DEBUG", "INFO"),)
    assert launch.program == ("all_reduce_perf",)
    with pytest.raises(UsageError, match="datatype"):
        parse_nccl_args(["all_reduce_perf", "-d", "complex"])


def test_one_process_per_node_with_eight_gpus_each() -> None:
    runner = make_runner()
    argv = ["mpirun", "-np", "2", "-npernode", "1", "all_reduce_perf", "-b", "1G", "-e", "8G", "-f", "2", "-g", "8"]
    run = nccl.parse_text(runner.run(argv, {}, "launcher", hosts_for(node_names(2))).stdout).runs[0]
    assert len(run.ranks) == 16
    assert len({r.pid for r in run.ranks if r.host == "nccl-worker-0"}) == 1
    assert [r.device for r in run.ranks[:8]] == list(range(8))


def test_nic_down_slows_its_node_and_drops_the_rail_from_ncclinfo() -> None:
    runner = make_runner(["nic-down@sim-node-04:2"])
    ref = _largest_busbw(mpirun_nccl(make_runner(), ["sim-node-03", "sim-node-04"]).stdout)
    result = mpirun_nccl(runner, ["sim-node-03", "sim-node-04"], env={"NCCL_DEBUG": "INFO"})
    assert _largest_busbw(result.stdout) < 0.7 * ref
    ib = [line for line in result.stdout.splitlines() if "NET/IB : Using" in line]
    assert all("mlx5_2" not in line for line in ib if line.startswith("nccl-worker-1:"))
    assert all("mlx5_2" in line for line in ib if line.startswith("nccl-worker-0:"))


def test_gpu_xid_hang_mode_prints_the_rank_list_and_nothing_more() -> None:
    runner = make_runner()
    from acceptance.sim.model.faults import FaultSet
    from acceptance.sim.model.faultspec import parse_fault

    runner.faults = FaultSet((parse_fault("gpu-xid@sim-node-02:1", runner.cluster, {"mode": "hang"}),))
    result = mpirun_nccl(runner, node_names(2))
    assert result.exit_code == 137
    assert result.duration_s >= 3600
    assert result.stdout.splitlines()[-1].startswith("#  Rank 15 ")


def test_two_healthy_runs_agree_within_5_percent_from_1mib_up() -> None:
    """What the fabric judge compares: a healthy run against a healthy baseline never looks degraded."""
    args = parse_nccl_args(["all_reduce_perf", "-b", "1M", "-e", "16G", "-f", "2"])
    worst = 1.0
    for seed in range(100):
        base, now = (
            ncclperf.simulate_rows(
                args, nodes=16, ranks_per_node=8, env={}, fabric=Fabric(), r=random.Random(s), max_bytes=16 << 30
            )
            for s in (seed, seed + 1000)
        )
        worst = min(worst, *(b.oop_us / n.oop_us for b, n in zip(base, now, strict=True)))
    assert worst > 0.95


def test_datatype_all_and_op_all_cycle_like_the_real_tool() -> None:
    tool = ["all_reduce_perf", "-b", "1G", "-e", "2G", "-f", "2", "-d", "all", "-o", "all"]
    run = nccl.parse_text(mpirun_nccl(make_runner(), node_names(2), tool).stdout).runs[0]
    keys = [(row.type, row.redop) for row in run.rows[::2]]
    assert keys[:6] == [("int8", op) for op in ("sum", "prod", "min", "max", "avg")] + [("uint8", "sum")]
    assert len(run.rows) == 12 * 5 * 2
    by_type = {row.type: row.oop.busbw or 0 for row in run.rows if row.size == 2 << 30 and row.redop == "sum"}
    assert by_type["int8"] < 0.85 * by_type["float"]
