"""NcclTest (argv ↔ spec, normalized equality) and NcclConditions (differences in words)."""

from __future__ import annotations

import pytest

from acceptance.errors import UsageError
from acceptance.tools.nccl import NcclConditions, NcclTest, parse_size


def test_two_spellings_of_one_command_are_equal() -> None:
    short = NcclTest.from_argv(["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2"])
    long = NcclTest.from_argv(
        [
            "/opt/nccl-tests/build/all_reduce_perf_mpi",
            "--minbytes",
            "8",
            "--maxbytes=17179869184",
            "--stepfactor",
            "2",
        ]
    )
    assert short.normalized() == long.normalized()
    assert short.collective == long.collective == "all_reduce"


def test_glued_short_values_and_order_do_not_matter() -> None:
    a = NcclTest.from_argv(["all_gather_perf", "-b8", "-e1G", "-g", "8"], {"NCCL_IB_HCA": "mlx5"})
    b = NcclTest.from_argv(["all_gather_perf", "-g", "8", "-e", "1024M", "-b", "8"], {"NCCL_IB_HCA": "mlx5"})
    assert a == b
    assert a.normalized() == b.normalized()


@pytest.mark.parametrize(
    "other",
    [
        (["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2"], {}),
        (["all_gather_perf", "-b", "8", "-e", "16G", "-f", "2"], {}),
        (["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-d", "double"], {}),
        (["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2"], {"NCCL_ALGO": "Ring"}),
    ],
)
def test_different_commands_never_compare_equal(other: tuple[list[str], dict[str, str]]) -> None:
    base = NcclTest.from_argv(["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2"])
    assert NcclTest.from_argv(*other).normalized() != base.normalized()


def test_argv_is_canonical_and_round_trips() -> None:
    test = NcclTest.from_argv(
        ["all_reduce_perf", "--iters=50", "-c", "0", "-e", "8G", "-b", "1M"], {"NCCL_DEBUG": "WARN"}
    )
    assert test.argv() == ["all_reduce_perf", "-b", "1048576", "-e", "8589934592", "-n", "50", "-c", "0"]
    assert NcclTest.from_argv(test.argv(), dict(test.env)) == test
    assert NcclTest.from_normalized(test.normalized()) == test


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["all_reduce_perf", "-q", "1"], "-q"),
        (["all_reduce_perf", "--bogus", "1"], "--bogus"),
        (["all_reduce_perf", "-e", "12X"], "-e"),
        (["all_reduce_perf", "-n"], "-n"),
        (["all_reduce_perf", "-o", "xor"], "-o"),
        (["all_reduce_perf", "-d", "fp7"], "-d"),
        (["all_reduce_perf", "stray"], "stray"),
        (["ls", "-b", "8"], "ls"),
    ],
)
def test_bad_argv_names_the_flag(argv: list[str], named: str) -> None:
    with pytest.raises(UsageError, match=named):
        NcclTest.from_argv(argv)


def test_sizes_parse_like_nccl_tests() -> None:
    assert parse_size("16G", "-e") == 17179869184
    assert parse_size("64k", "-b") == 65536
    assert parse_size("1.5M", "-b") == 1572864
    assert parse_size("8", "-b") == 8


def _conditions(**changes: object) -> NcclConditions:
    base = NcclConditions(
        command=NcclTest.from_argv(["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2"]).normalized(),
        collective="all_reduce",
        min_bytes=8,
        max_bytes=16 << 30,
        ranks_per_node=8,
        node_count=10,
        nccl_tests_version="2.17.8",
        nccl_version="2.28.7",
        cuda_version="12.8",
    )
    return NcclConditions.from_json({**base.to_json(), **changes})


def test_identical_conditions_have_no_difference() -> None:
    assert _conditions().differences(_conditions()) == []


def test_differences_are_spelled_out() -> None:
    now = _conditions(nccl_version="2.29.2", max_bytes=8 << 30, node_count=9)
    assert now.differences(_conditions()) == [
        "message sizes 8 B–8 GiB now, 8 B–16 GiB at handover",
        "node count 9 now, 10 at handover",
        "NCCL 2.29.2 now, 2.28.7 at handover",
    ]


def test_unknown_today_but_known_at_handover_is_a_difference() -> None:
    assert _conditions(cuda_version=None).differences(_conditions()) == ["CUDA unknown now, 12.8 at handover"]


def test_command_option_and_env_differences() -> None:
    other = NcclTest.from_argv(["all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-n", "5"], {"NCCL_ALGO": "Tree"})
    diffs = _conditions(command=other.normalized()).differences(_conditions())
    assert diffs == [
        "option iters=5 now, unset at handover",
        "environment NCCL_ALGO=Tree now, unset at handover",
    ]


def test_conditions_json_round_trip() -> None:
    assert NcclConditions.from_json(_conditions().to_json()) == _conditions()


def test_the_launch_is_kept_in_the_json_only_where_the_backend_said_it() -> None:
    assert "launch" not in _conditions().to_json(), "backends without a launch choice record what they did before"
    launched = _conditions(launch="srun --mpi=pmi2")
    assert launched.to_json()["launch"] == "srun --mpi=pmi2"
    assert NcclConditions.from_json(launched.to_json()) == launched
    said = "launched with mpirun now, srun --mpi=pmi2 at handover"
    assert _conditions(launch="mpirun").differences(launched) == [said]


def test_a_report_whose_header_sweep_is_not_the_command_s_is_named() -> None:
    """Issue 23: the rows follow the header's sweep; the header must be the sweep the command asked for."""
    from acceptance.tools.nccl import NcclTest, parse_text
    from acceptance.tools.nccl.checks import command_mismatch
    from tests.shared import FIXTURES

    run = parse_text(
        (FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-srun-label-warn-mid-table-split-rows.txt").read_text()
    ).runs[0]
    assert (
        command_mismatch(run.params, NcclTest.from_argv(["all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "2"]).sizes())
        is None
    )
    other = command_mismatch(
        run.params, NcclTest.from_argv(["all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2"]).sizes()
    )
    assert other == (
        "the report's header asks for sizes 1048576 to 1073741824 (11 sizes: minBytes 1048576 maxBytes 1073741824 "
        "step: 2(factor)) but the command asked for 8 to 1073741824 (28 sizes): not this command's output"
    )
    reduced = dict(run.params, max_bytes_effective=1 << 29)  # `Reducing maxBytes`: still the command's sweep
    assert (
        command_mismatch(reduced, NcclTest.from_argv(["all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "2"]).sizes())
        is None
    )
