"""The suite under a faulty Kubernetes API: no wrong verdict, no hang, no object left (tests/fault_matrix.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault_matrix import BOUND_S, CASES, Case, run_case

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_faults_give_the_right_verdict_or_an_explicit_error_in_bounded_time_and_leave_nothing(
    case: Case, tmp_path: Path
) -> None:
    outcome = run_case(case, tmp_path)
    log = (tmp_path / "pytest.out").read_text()[-3000:]
    assert not outcome.hung, f"no end within {BOUND_S} s\n{log}"
    assert outcome.wrong == [], log
    assert outcome.objects_left == [], log
    if case.interrupt:
        assert outcome.exit_code == pytest.ExitCode.INTERRUPTED, log
    else:
        assert outcome.exit_code in (0, 1), log
        assert outcome.verdicts, log
    if case.delete_object:
        assert outcome.verdicts.get("test_nccl_busbw[all_reduce_perf]") == "error", log
    if case.hardware == "nic-degraded@sim-node-07" and not case.interrupt:
        assert outcome.verdicts.get("test_nccl_busbw[all_reduce_perf]") in ("fail", "error"), log
