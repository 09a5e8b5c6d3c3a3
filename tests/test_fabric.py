"""The fabric verdict against the handover baseline (issue 3's rules)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from acceptance.cmd.parse_nccl import read_nccl
from acceptance.judge.fabric import judge_fabric
from acceptance.judge.verdict import Status
from acceptance.links import NodeLinks
from acceptance.margins import Margins
from acceptance.tools.nccl import NcclConditions, NcclRun, parse_text
from tests.shared import CORPUS, FIXTURES, needs_shared

EIGHTY = CORPUS / "nccl" / "nccl-tests-2.17.8-5colls-10node-80rank-h100-double-ok.txt"
SRUN = FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-srun-label-warn-mid-table-split-rows.txt"
HANG = FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-2node-timeout-T30-hang.txt"
GIB = 1 << 30


def _baseline() -> NcclRun:
    return read_nccl(SRUN).runs[0]


def _scale(run: NcclRun, size: int, factor: float, wrong: float | None = None) -> NcclRun:
    rows = []
    for row in run.rows:
        changed = row
        if row.size == size and row.oop is not None:
            busbw = round(row.oop.busbw * factor, 2) if row.oop.busbw else None
            oop = dataclasses.replace(row.oop, busbw=busbw)
            if wrong is not None:
                oop = dataclasses.replace(oop, wrong=wrong)
            changed = dataclasses.replace(row, oop=oop)
        rows.append(changed)
    return dataclasses.replace(run, rows=tuple(rows))


def _judge(now: NcclRun, base: NcclRun | None = None, **margins: float) -> tuple[Status, str]:
    base = base or _baseline()
    verdict = judge_fabric(now, NcclConditions.of(now), base, NcclConditions.of(base), Margins(**margins))
    return verdict.status, verdict.summary


def test_identical_run_passes() -> None:
    base = _baseline()
    verdict = judge_fabric(base, NcclConditions.of(base), base, NcclConditions.of(base), Margins())
    assert verdict.status is Status.PASS
    assert verdict.figures["sizes_compared"] == 11
    assert verdict.figures["busbw_oop[1 GiB]"] == 446.01
    assert verdict.table is not None
    assert list(verdict.table.columns) == ["size", "busbw_now", "busbw_baseline", "ratio", "passed"]
    assert verdict.table["passed"].all()


def test_six_percent_drop_at_one_size_fails_naming_it() -> None:
    base = _baseline()
    now = _scale(base, GIB, 0.94)
    verdict = judge_fabric(now, NcclConditions.of(now), base, NcclConditions.of(base), Margins(busbw_tolerance=0.05))
    assert verdict.status is Status.FAIL
    assert verdict.summary == (
        "all_reduce_perf: busbw 419.2 GB/s at 1 GiB vs 446.0 at handover (\u22126%, margin \u22125%); "
        "worst of 11 sizes ≥ 1 MiB"
    )
    assert verdict.figures["worst_size"] == GIB
    assert verdict.figures["worst_ratio"] == pytest.approx(0.94, abs=1e-3)
    assert verdict.figures["measured"] == 419.25
    assert verdict.figures["expected"] == 446.01
    assert verdict.table is not None
    assert verdict.table["passed"].sum() == 10


def test_four_percent_drop_is_within_a_five_percent_margin() -> None:
    status, summary = _judge(_scale(_baseline(), GIB, 0.96))
    assert status is Status.PASS
    assert "1 GiB" in summary


def test_drop_below_the_minimum_size_passes() -> None:
    base = _baseline()
    status, _ = _judge(_scale(base, 64 << 10, 0.94), base)
    assert status is Status.PASS
    status, _ = _judge(_scale(base, 1 << 20, 0.94), base, busbw_min_size=2 << 20)
    assert status is Status.PASS
    status, _ = _judge(_scale(base, 1 << 20, 0.94), base)
    assert status is Status.FAIL


def test_different_nccl_version_or_sizes_is_not_comparable() -> None:
    base = _baseline()
    cond = NcclConditions.of(base)
    then = dataclasses.replace(cond, nccl_version="2.28.7", max_bytes=16 << 30)
    verdict = judge_fabric(base, cond, base, then, Margins())
    assert verdict.status is Status.NOT_COMPARABLE
    assert verdict.evidence == (
        "message sizes 1 MiB–1 GiB now, 1 MiB–16 GiB at handover",
        "NCCL 2.29.2 now, 2.28.7 at handover",
    )
    assert "message sizes 1 MiB–1 GiB now, 1 MiB–16 GiB at handover" in verdict.summary


def test_wrong_elements_fail() -> None:
    base = _baseline()
    status, summary = _judge(_scale(base, 4 << 20, 1.0, wrong=3), base)
    assert status is Status.FAIL
    assert summary.startswith("all_reduce_perf: 3 wrong elements at 4 MiB (out-of-place)")


def test_missing_size_fails_naming_it() -> None:
    base = _baseline()
    now = dataclasses.replace(base, rows=tuple(r for r in base.rows if r.size != 512 << 20))
    status, summary = _judge(now, base)
    assert status is Status.FAIL
    assert summary == "all_reduce_perf: 1 size missing today (512 MiB), present at handover"


def test_failed_run_quotes_the_error_lines() -> None:
    hang = read_nccl(HANG).runs[0]
    base = _baseline()
    verdict = judge_fabric(hang, NcclConditions.of(hang), base, NcclConditions.of(base), Margins())
    assert verdict.status is Status.FAIL
    assert verdict.summary == "all_reduce_perf: run failed — line 34: gpu-01: Test timeout (30s) common.cu:412"
    assert verdict.evidence[0] == "line 34: gpu-01: Test timeout (30s) common.cu:412"
    assert verdict.figures["failing_hosts"] == "gpu-01,gpu-02"


def test_incomplete_run_is_an_error() -> None:
    base = _baseline()
    cut = dataclasses.replace(base, status="incomplete", rows=base.rows[:4])
    status, summary = _judge(cut, base)
    assert status is Status.ERROR
    assert "incomplete" in summary


@needs_shared
def test_corpus_eighty_rank_run_against_itself_and_degraded() -> None:
    run = read_nccl(EIGHTY).run("all_reduce")
    status, _ = _judge(run, run)
    assert status is Status.PASS
    status, summary = _judge(_scale(run, GIB, 0.758), run)
    assert status is Status.FAIL
    assert summary == (
        "all_reduce_perf: busbw 261.4 GB/s at 1 GiB vs 344.9 at handover (\u221224.2%, margin \u22125%); "
        "worst of 10 sizes ≥ 1 MiB"
    )


def test_margins_are_validated() -> None:
    with pytest.raises(ValueError, match="busbw_tolerance"):
        Margins(busbw_tolerance=1.5)


def _replace_busbw(run: NcclRun, values: dict[int, float]) -> NcclRun:
    rows = tuple(
        dataclasses.replace(r, oop=dataclasses.replace(r.oop, busbw=values[r.size]))
        if r.oop is not None and r.size in values
        else r
        for r in run.rows
    )
    return dataclasses.replace(run, rows=rows)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_busbw_that_is_not_a_number_fails_that_size_wherever_it_is(bad: float) -> None:
    """A NaN at the first judged size once won the worst-ratio race and passed a −60% fabric."""
    base = _baseline()
    judged = [r for r in base.rows if r.size >= 1 << 20 and r.oop is not None]
    for position in (0, len(judged) // 2, len(judged) - 1):
        slow = {r.size: round(r.oop.busbw * 0.4, 2) for r in judged if r.oop is not None}
        slow[judged[position].size] = bad
        status, summary = _judge(_replace_busbw(base, slow), base)
        assert status is Status.FAIL
        assert "busbw is not a number at 1 size" in summary
    healthy = {r.size: r.oop.busbw for r in judged if r.oop is not None}
    healthy[judged[0].size] = bad
    status, summary = _judge(_replace_busbw(base, healthy), base)
    assert status is Status.FAIL, "one unusable size fails even when every other size is fine"


def test_a_different_image_is_not_comparable() -> None:
    base = _baseline()
    then = dataclasses.replace(NcclConditions.of(base), image="repo/nccl-tests@sha256:aaa")
    now = dataclasses.replace(NcclConditions.of(base), image="repo/nccl-tests@sha256:bbb")
    verdict = judge_fabric(base, now, base, then, Margins())
    assert verdict.status is Status.NOT_COMPARABLE
    assert "image repo/nccl-tests@sha256:bbb now, repo/nccl-tests@sha256:aaa at handover" in verdict.summary
    unrecorded = dataclasses.replace(then, image=None)  # a baseline from before images were recorded
    assert judge_fabric(base, now, base, unrecorded, Margins()).status is Status.PASS
    tagged = dataclasses.replace(now, image="repo/nccl-tests:2.26")  # the cluster reported no digest today
    verdict = judge_fabric(base, tagged, base, then, Margins())
    assert verdict.status is Status.NOT_COMPARABLE
    assert "image repo/nccl-tests:2.26 (a tag: no digest was reported for it, so it cannot be shown" in verdict.summary


def test_a_different_launch_is_not_comparable() -> None:
    """A Slurm handover launched with ``srun --mpi=pmi2``; today's run with ``mpirun`` is not the same measurement."""
    base = _baseline()
    then = dataclasses.replace(NcclConditions.of(base), launch="srun --mpi=pmi2")
    now = dataclasses.replace(NcclConditions.of(base), launch="mpirun")
    verdict = judge_fabric(base, now, base, then, Margins())
    assert verdict.status is Status.NOT_COMPARABLE
    assert "launched with mpirun now, srun --mpi=pmi2 at handover" in verdict.summary
    assert judge_fabric(base, then, base, then, Margins()).status is Status.PASS
    unrecorded = dataclasses.replace(then, launch=None)  # a baseline from before launches were recorded
    assert judge_fabric(base, now, base, unrecorded, Margins()).status is Status.PASS


def test_na_where_the_busbw_of_two_sizes_belongs_fails_naming_the_line() -> None:
    """Issue 23: the busbw of two sizes replaced by N/A parsed `ok` and passed 'within margin at all sizes'."""
    lines = SRUN.read_text().splitlines(keepends=True)
    for number, busbw in ((40, "434.46"), (42, "446.01")):
        lines[number - 1] = lines[number - 1].replace(f"  {busbw}", f"  {'N/A':>{len(busbw)}}", 1)
    now = parse_text("".join(lines), str(SRUN)).runs[0]
    assert now.status == "incomplete"
    damaged = [e for e in now.errors if e.kind == "output"]
    assert [e.line for e in damaged] == [40, 42]
    assert "N/A where the out-of-place busbw belongs at size 268435456" in damaged[0].text
    verdict = judge_fabric(now, NcclConditions.of(now), _baseline(), NcclConditions.of(_baseline()), Margins())
    assert verdict.status is Status.FAIL
    assert verdict.summary.startswith("all_reduce_perf: run is incomplete (its report cannot be read whole) — line 40:")
    assert "N/A where the out-of-place busbw belongs" in verdict.summary


def test_a_run_whose_busbw_is_none_fails_that_size_as_n_a() -> None:
    """The judge never skips a size whose busbw is missing (N/A in a record built from JSON, say)."""
    base = _baseline()
    rows = tuple(
        dataclasses.replace(r, oop=dataclasses.replace(r.oop, busbw=None)) if r.size == GIB and r.oop else r
        for r in base.rows
    )
    status, summary = _judge(dataclasses.replace(base, rows=rows), base)
    assert status is Status.FAIL
    assert summary == "all_reduce_perf: busbw is not a number at 1 size (1 GiB: N/A now, 446.01 GB/s at handover)"


SIM_LINKS = NodeLinks(nvlink_gbps_per_gpu=3600, nics=8, nic_gbps=400)  # the simulated H200 nodes


def test_a_busbw_above_what_the_links_carry_is_refused_naming_the_bound() -> None:
    """Issue 23: a fault factor of infinity gave busbw 2,400x the baseline and an accepted run."""
    base = _baseline()
    absurd = _scale(base, GIB, 2400.0)
    for links, bound, how in (
        (SIM_LINKS, "800 GB/s", "8 NICs x 400 Gb/s each way x 2 directions / 8 bits per byte"),
        (None, "10000 GB/s", "beyond any GPU interconnect"),
    ):
        verdict = judge_fabric(absurd, NcclConditions.of(absurd), base, NcclConditions.of(base), Margins(), links)
        assert verdict.status is Status.FAIL
        assert verdict.summary.startswith(
            f"all_reduce_perf: busbw 1.07042e+06 GB/s at 1 GiB (out-of-place) is more than the links can carry, {bound}"
        )
        assert how in verdict.summary
        assert verdict.figures["busbw_bound"] == float(bound.split()[0])
    healthy = judge_fabric(base, NcclConditions.of(base), base, NcclConditions.of(base), Margins(), SIM_LINKS)
    assert healthy.status is Status.PASS


def test_the_bound_is_the_nvlink_s_in_one_node_and_the_tighter_of_both_over_several() -> None:
    from acceptance.links import busbw_bound

    assert busbw_bound(SIM_LINKS, 1).gbytes_per_s == 900.0  # 3600 Gb/s x 2 / 8
    assert busbw_bound(SIM_LINKS, 2).gbytes_per_s == 800.0  # 8 x 400 Gb/s x 2 / 8
    assert busbw_bound(SIM_LINKS, None).gbytes_per_s == 900.0  # either: the looser
    assert busbw_bound(NodeLinks(nics=4, nic_gbps=200), 1).gbytes_per_s == 10_000.0  # NICs carry no 1-node run
    base = _baseline()  # 2 nodes: 850 GB/s fits one GPU's NVLink (900) but not the node's NICs (800)
    over = _replace_busbw(base, {GIB: 850.0})
    status, _ = _judge(over, base)
    assert status is Status.PASS  # without the node's links only the absurd is refused
    verdict = judge_fabric(over, NcclConditions.of(over), base, NcclConditions.of(base), Margins(), SIM_LINKS)
    assert verdict.status is Status.FAIL
    assert "busbw 850 GB/s at 1 GiB (out-of-place) is more than the links can carry, 800 GB/s" in verdict.summary


@needs_shared
def test_real_single_node_nvls_figures_are_within_the_nvlink_bound() -> None:
    """The 8xH100 NVSwitch baseline (NVLS all_reduce ~480 GB/s, above one direction's 450) is plausible."""
    for run in read_nccl(CORPUS / "nccl" / "nccl-tests-2.17.8-5colls-1node-8xh100-nvswitch-baseline-ok.txt").runs:
        verdict = judge_fabric(run, NcclConditions.of(run), run, NcclConditions.of(run), Margins(), SIM_LINKS)
        assert verdict.status is Status.PASS, verdict.summary


def test_a_run_beyond_the_links_or_of_another_sweep_is_never_recorded() -> None:
    from acceptance.criteria.fabric import refusal
    from acceptance.tools.nccl import NcclTest

    base = _baseline()
    test = NcclTest.from_argv(["all_reduce_perf", "-b", "1M", "-e", "1G", "-f", "2"])
    assert refusal("all_reduce_perf", base, test, SIM_LINKS, 2, recording=True) is None
    absurd = _scale(base, GIB, 2400.0)
    verdict = refusal("all_reduce_perf", absurd, test, SIM_LINKS, 2, recording=True)
    assert verdict is not None
    assert verdict.status is Status.FAIL
    assert verdict.summary.endswith("not a measurement; not recordable as a baseline")
    assert refusal("all_reduce_perf", absurd, test, SIM_LINKS, 2, recording=False) is None  # the judge says it
    other = NcclTest.from_argv(["all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2"])
    verdict = refusal("all_reduce_perf", base, other, SIM_LINKS, 2, recording=False)
    assert verdict is not None
    assert "not this command's output" in verdict.summary
