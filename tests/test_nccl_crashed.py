"""Outputs of crashed nccl-tests runs are failures that name their cause and host, never "not recognised".

A run that dies before nccl-tests prints its header leaves only NCCL WARN lines or the
launcher's own error (PALS/CXI, an Open MPI box, srun task errors, an ssh refusal). Real
captures from the corpus and a hand-made NCCL WARN capture (fixtures/nccl/README.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.clusters.base import WorkloadResult
from acceptance.cmd.parse_nccl import read_nccl
from acceptance.criteria.fabric import _died_before_header
from acceptance.judge.verdict import Status
from acceptance.tools import nccl
from tests.shared import CORPUS, CORPUS2, FIXTURES, needs_shared

LAUNCHERS = CORPUS2 / "launcher-mpirun-srun"
WARN_ONLY = FIXTURES / "nccl" / "nccl-2.21-warn-only-ib-open-device-failed-before-header.txt"

#: capture -> (first failure line, its kind, the host it names, hosts named anywhere)
CRASHED: dict[Path, tuple[int, str, str | None, set[str]]] = {
    CORPUS / "nccl" / "launcher-only-cxi-alloc-failed-no-nccl-output.txt": (
        1,
        "launcher",
        "x3006c0s1b1n0",
        {"x3006c0s1b1n0"},
    ),
    LAUNCHERS / "deepspeed-runner-mpirun-orte-unable-to-start-daemons-ssh-connection-refused.txt": (
        2,
        "launcher",
        "algo-2",
        {"algo-2"},
    ),
    LAUNCHERS / "prterun-ompi5-ofi-mtl-abort-signal6-backtrace-interleaved-remote-stderr-wrapped-notice.txt": (
        1,
        "launcher",
        "neutron-nvidia",
        {"neutron-nvidia"},
    ),
    LAUNCHERS / "srun-overlap-py-spy-step-terminated-8-nodes-missing-newline.txt": (
        1,
        "launcher",
        "jean-zay-iam33",
        {f"jean-zay-iam{n}" for n in ("06", "31", "32", "33", "39", "50", "51", "52")},
    ),
    WARN_ONLY: (8, "nccl", "gpu-07", {"gpu-07"}),
}


def _result(output: str, exit_code: int = 1) -> WorkloadResult:
    return WorkloadResult("nccl-all_reduce_perf", "nccl", output, exit_code, "failed", "", None, None, {}, (), (), "")


@needs_shared
@pytest.mark.parametrize("path", sorted(CRASHED), ids=lambda p: p.name[:60])
def test_a_run_that_died_before_the_header_is_failed_with_its_failure_lines(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, kind, host, hosts = CRASHED[path]
    capture = read_nccl(path)
    assert (capture.status, capture.runs) == ("failed", ())
    first = nccl.first_failure(capture.errors)
    assert first is not None
    assert (first.line, first.kind, first.host) == (line, kind, host)
    assert {e.host for e in capture.errors if e.host} == hosts
    assert main(["parse", "nccl", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"][[e["line"] for e in doc["errors"]].index(line)]["host"] == host


def test_warn_lines_keep_their_text_and_drop_the_propagation_lines() -> None:
    capture = read_nccl(WARN_ONLY)
    assert [(e.line, e.kind) for e in capture.errors] == [(8, "nccl"), (11, "nccl"), (16, "nccl"), (19, "nccl")]
    assert all("NCCL WARN" in e.text and "->" not in e.text for e in capture.errors)


def test_info_lines_only_are_incomplete_not_unrecognised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NCCL initialised but nccl-tests printed nothing (a non-root rank's log, a cut capture)."""
    path = tmp_path / "info.txt"
    path.write_text("gpu-07:3977:3977 [0] NCCL INFO Bootstrap : Using eth0:10.0.3.7<0>\n")
    assert main(["parse", "nccl", str(path)]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "incomplete"


@needs_shared
def test_the_fabric_verdict_quotes_the_first_failure_line_and_its_host() -> None:
    path = LAUNCHERS / "deepspeed-runner-mpirun-orte-unable-to-start-daemons-ssh-connection-refused.txt"
    output = path.read_text()
    verdict = _died_before_header("all_reduce_perf", nccl.parse_text(output, "launcher log"), _result(output))
    assert verdict.status == Status.FAIL
    assert verdict.summary == (
        "all_reduce_perf: the run died before nccl-tests printed its header on algo-2 — "
        "line 2: ssh: connect to host algo-2 port 22: Connection refused; exit 1"
    )
    assert verdict.figures["failing_host"] == "algo-2"
    assert verdict.evidence[0] == "line 2: ssh: connect to host algo-2 port 22: Connection refused [algo-2]"


def test_the_fabric_verdict_of_warn_lines_names_the_node() -> None:
    output = WARN_ONLY.read_text()
    verdict = _died_before_header("all_reduce_perf", nccl.parse_text(output), _result(output))
    assert verdict.figures["failing_host"] == "gpu-07"
    assert (
        "line 8: gpu-07:3977:3977 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_open_device failed" in verdict.summary
    )


TUNING = (
    "     Function |       LL     LL128    Simple   |          Tree           Ring  CollNetDirect   CollNetChain"
    "           NVLS       NVLSTree            PAT  \n"
    "    AllReduce |        0         0         1   |             1              1              1              1"
    "              1              1              1  \n"
)


def test_nccl_s_protocol_table_is_nccl_output_and_a_failure_shaped_like_it_is_still_a_failure() -> None:
    """NCCL_DEBUG=INFO prints its algorithm/protocol table without the INFO prefix: alone it is NCCL output
    (incomplete, not "not recognised"); a line of that shape holding another word is read in full."""
    alone = nccl.parse_text(TUNING)
    assert (alone.recognised, alone.status, alone.errors) == (True, "incomplete", ())
    odd = "    AllReduce |        0         0         1   |   error: transport init failed\n"
    crash = "gpu-1: Test NCCL failure common.cu:1012 'unhandled system error'\n"
    crashed = nccl.parse_text(TUNING + odd + crash)
    assert crashed.status == "failed"
    assert [(e.line, e.kind) for e in crashed.errors] == [(3, None), (4, "test")]
