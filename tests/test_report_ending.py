"""How a pytest session ended, as the decision reads it: interrupted, stopped early, what it selected."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from acceptance.report.ending import session_end

ITEMS = ("acceptance/test_preflight.py::test_nodes", "acceptance/test_fabric.py::test_nccl_busbw[all_reduce_perf]",
         "acceptance/test_site_checks.py::test_site[x]", "tests/other.py::test_y")  # fmt: skip


def session(exitstatus: int = 0, shouldfail: Any = False, shouldstop: Any = False) -> Any:
    items = [SimpleNamespace(nodeid=n) for n in ITEMS]
    return SimpleNamespace(exitstatus=exitstatus, shouldfail=shouldfail, shouldstop=shouldstop, items=items)


def test_a_signal_is_an_interruption_named_by_it() -> None:
    ended = session_end(session(pytest.ExitCode.INTERRUPTED), "SIGTERM")
    assert ended == {"interrupted": "SIGTERM", "selected_criteria": [0, 2]}


def test_ctrl_c_without_the_plugins_handler_is_a_keyboard_interrupt() -> None:
    assert session_end(session(pytest.ExitCode.INTERRUPTED))["interrupted"] == "KeyboardInterrupt"


@pytest.mark.parametrize("field", ["shouldfail", "shouldstop"])
def test_maxfail_is_a_stop_with_pytests_reason(field: str) -> None:
    ended = session_end(session(pytest.ExitCode.TESTS_FAILED, **{field: "stopping after 1 failures"}))
    assert ended == {"stopped": "stopping after 1 failures", "selected_criteria": [0, 2]}


def test_a_run_that_finished_records_only_its_selection() -> None:
    assert session_end(session()) == {"selected_criteria": [0, 2]}
    assert session_end(SimpleNamespace(exitstatus=0, shouldfail=False, shouldstop=True, items=[])) == {
        "stopped": "pytest stopped the run early"
    }
