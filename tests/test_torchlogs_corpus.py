"""PyTorch / NCCL / torchrun failure logs of ../shared/corpus-wave2: every error line, rank and host."""

from __future__ import annotations

from datetime import datetime

import pytest

from acceptance.tools import torchlogs
from tests.shared import wave2, wave2_files

KIND = "pytorch-nccl-watchdog"
WATCHDOG = "torch-watchdog-timeout-broadcast-2rank-deepspeed-sigkill-handler-rc-6.log"
IB = "torch-1.x-nccl-watchdog-ncclRemoteError-ib-completion-error-elastic-sigterm.log"
M4 = "torch-1.12-watchdog-cudaerror-unknown-interleaved-terminate-srun-node-failure.log"
THREE = "torchrun-2.6-childfailederror-3-ranks-interleaved-tracebacks-stampede3.log"
ONE = "torchrun-2.6-childfailederror-no-other-failures-rank0-prefixed-traceback-stampede3.log"


def _kinds(log: torchlogs.TorchLog) -> list[tuple[str, int | None]]:
    return [(e.kind, e.rank) for e in log.errors]


def test_every_corpus_log_is_recognised() -> None:
    files = wave2_files(KIND)
    if not files:
        pytest.skip("../shared/corpus-wave2 is absent")
    assert len(files) == 5
    for path in files:
        assert torchlogs.parse(path.read_text(), path.name).recognised, path.name


def test_2x_watchdog_timeout_per_rank_with_op_sequence_and_durations() -> None:
    log = torchlogs.parse(wave2(KIND, WATCHDOG), WATCHDOG)
    timeouts = [e for e in log.errors if e.kind == "watchdog-timeout"]
    assert [(e.rank, e.line, e.elapsed_ms) for e in timeouts] == [
        (0, 1, 600081),
        (1, 2, 600088),
        (0, 11, 600081),
        (1, 21, 600088),
        (0, 33, 600081),
        (1, 50, 600088),
    ]
    assert {(e.op, e.seq, e.timeout_ms) for e in timeouts} == {("BROADCAST", 1, 600000)}
    assert timeouts[0].time == datetime(2025, 12, 18, 20, 27, 21, 426415)  # the year of the DeepSpeed lines
    assert timeouts[4].time is None  # the what(): block carries no time
    assert len({e.template for e in timeouts}) == 1  # one failure, whatever the rank and duration
    status = [e for e in log.errors if e.kind == "watchdog-status"]
    assert [(e.rank, e.seq) for e in status] == [(1, 1), (0, 1)]
    assert [e.text for e in log.errors if e.kind == "abort"] == [
        "terminate called after throwing an instance of 'c10::DistBackendError'"
    ] * 2
    assert log.ranks == ()
    assert log.world_size is None
    assert not log.has_nccl_own_lines


def test_1x_ncclremoteerror_joined_with_its_ib_completion_error_and_rank_host_from_nccl_info() -> None:
    log = torchlogs.parse(wave2(KIND, IB), IB)
    errors = [e for e in log.errors if e.kind == "nccl-error"]
    assert [(e.rank, e.line, e.nccl_version) for e in errors] == [(16, 7, "2.19.3"), (16, 12, "2.19.3")]
    assert errors[0].text == (
        "NCCL error: remote process exited or there was a network error, NCCL version 2.19.3 / ncclRemoteError: "
        "A call failed possibly due to a network error or a remote process exiting prematurely. / NET/IB : Got "
        "completion from peer 10.42.0.2<47534> with error 5, opcode 48, len 32764, vendor err 244"
    )
    assert errors[0].template == errors[1].template
    assert [(r.rank, r.host, r.source, r.device, r.pid) for r in log.ranks] == [(16, "node-1", "nccl-info", 0, 178)]
    assert log.world_size == 32
    assert log.nccl_versions == ("2.19.3",)
    assert log.has_nccl_own_lines
    assert [(a.kind, a.pid, a.time) for a in log.agent] == [
        ("sigterm", 179, datetime(2024, 7, 25, 6, 36, 18, 293000)),
        ("sigterm", 180, datetime(2024, 7, 25, 6, 36, 18, 294000)),
    ]
    assert [e.kind for e in log.errors] == ["note", "note", "nccl-error", "abort", "nccl-error"]


def test_interleaved_terminate_lines_give_two_aborts_and_the_cuda_errors() -> None:
    log = torchlogs.parse(wave2(KIND, M4), M4)
    assert _kinds(log) == [
        ("abort", None),
        ("abort", None),
        ("cuda-error", None),
        ("cuda-error", None),
        ("abort", None),
        ("cuda-error", None),
    ]
    assert {e.text for e in log.errors if e.kind == "abort"} == {
        "terminate called after throwing an instance of 'c10::CUDAError'"
    }
    assert {e.text for e in log.errors if e.kind == "cuda-error"} == {"CUDA error: unknown error"}


def test_childfailederror_summary_gives_failures_root_cause_ranks_and_hosts() -> None:
    log = torchlogs.parse(wave2(KIND, THREE), THREE)
    host = "c561-007.stampede3.tacc.utexas.edu"
    assert [(f.rank, f.local_rank, f.host, f.exitcode, f.pid, f.root_cause) for f in log.failures] == [
        (2, 2, host, 1, 102932, False),
        (3, 3, host, 1, 102933, False),
        (0, 0, host, 1, 102930, True),
    ]
    assert {f.time for f in log.failures} == {datetime(2026, 6, 8, 19, 4, 45)}
    assert {f.script for f in log.failures} == {"train.py"}
    assert [(r.rank, r.host, r.source) for r in log.ranks] == [
        (2, host, "torchrun"),
        (3, host, "torchrun"),
        (0, host, "torchrun"),
    ]
    assert log.torch_version == "2.6.0+cu124"  # glued to the next line's date in the log
    assert [e.text for e in log.errors] == [
        "FileNotFoundError: [Errno 2] No such file or directory: '/work2/11095/jwan4/PanguWeather/config/"
        "your_config.yaml'"
    ]
    assert [(a.kind, a.exitcode, a.local_rank) for a in log.agent] == [("sigterm", None, None), ("worker-failed", 1, 0)]


def test_no_other_failures_and_rank_prefixed_traceback() -> None:
    log = torchlogs.parse(wave2(KIND, ONE), ONE)
    assert [(f.rank, f.root_cause, f.exitcode) for f in log.failures] == [(0, True, 1)]
    assert [(e.kind, e.rank, e.line) for e in log.errors] == [("exception", 0, 44)]
    assert log.errors[0].text == "PermissionError: [Errno 13] Permission denied: '/glade'"
    assert [a.kind for a in log.agent] == ["sigterm"] * 3 + ["worker-failed"]


def test_text_that_is_no_torch_log_is_not_recognised() -> None:
    log = torchlogs.parse("hello\nworld\n", "x")
    assert not log.recognised
    assert log.errors == ()
    assert log.lines == 2


def test_step_times_from_megatron_lines() -> None:
    text = (
        " [2026-11-23 18:53:56] iteration      698/    1200 | consumed samples: 1\n"
        "[rank3]: [2026-11-23 18:53:58] iteration      699/    1200 | x\n"
    )
    stamps = torchlogs.step_times(text)
    assert [(s.step, s.time, s.rank, s.line) for s in stamps] == [
        (698, datetime(2026, 11, 23, 18, 53, 56), None, 1),
        (699, datetime(2026, 11, 23, 18, 53, 58), 3, 2),
    ]


def test_step_times_keep_the_rank_behind_a_paste_prefix() -> None:
    text = "        [rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 640/644 = 99.3789%  loss:  6.2116\n"
    assert [(s.step, s.rank, s.time) for s in torchlogs.step_times(text)] == [
        (640, 0, datetime(2025, 4, 1, 0, 25, 47, 84000))
    ]
