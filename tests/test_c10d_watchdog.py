"""NCCL watchdog lines of PyTorch's c10d in rank logs, on every real log of the corpus."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from acceptance.tools.c10d import parse_watchdog
from tests.shared import SHARED, needs_shared

FOLDER = SHARED / "corpus-wave2" / "pytorch-nccl-watchdog"
REFERENCE = datetime(2025, 1, 10, tzinfo=UTC)
EXPECT = {  # file -> [(line, kind, rank, time)]
    "torch-watchdog-timeout-broadcast-2rank-deepspeed-sigkill-handler-rc-6.log": [
        (1, "timeout", 0, datetime(2024, 12, 18, 20, 27, 21, 426415, tzinfo=UTC)),
        (2, "timeout", 1, datetime(2024, 12, 18, 20, 27, 21, 433063, tzinfo=UTC)),
    ],
    "torch-1.x-nccl-watchdog-ncclRemoteError-ib-completion-error-elastic-sigterm.log": [(7, "nccl-error", 16, None)],
    "torch-1.12-watchdog-cudaerror-unknown-interleaved-terminate-srun-node-failure.log": [],
    "torchrun-2.6-childfailederror-3-ranks-interleaved-tracebacks-stampede3.log": [],
    "torchrun-2.6-childfailederror-no-other-failures-rank0-prefixed-traceback-stampede3.log": [],
}


def test_every_corpus_file_is_covered() -> None:
    if not FOLDER.is_dir():
        pytest.skip("../shared is absent")
    assert {p.name for p in FOLDER.iterdir() if p.suffix != ".source"} == set(EXPECT)


@needs_shared
@pytest.mark.parametrize("name", sorted(EXPECT))
def test_corpus_log(name: str) -> None:
    events = parse_watchdog((FOLDER / name).read_text(errors="replace"), reference=REFERENCE)
    assert [(e.line, e.kind, e.rank, e.time) for e in events] == EXPECT[name]


@needs_shared
def test_timeout_record_is_read_whole_and_repeats_are_not_counted() -> None:
    text = (FOLDER / "torch-watchdog-timeout-broadcast-2rank-deepspeed-sigkill-handler-rc-6.log").read_text()
    first = parse_watchdog(text, reference=REFERENCE)[0]
    assert (first.op, first.seq, first.timeout_ms, first.ran_ms) == ("BROADCAST", 1, 600000, 600081)
    assert "terminated with exception: [Rank 0] Watchdog caught" in text, "the repeat is there, and skipped"


def test_without_a_reference_there_is_no_year_so_no_time() -> None:
    line = (
        "[rank3]:[E0102 00:00:01.000000001 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600010 milliseconds before timing out."
    )
    assert parse_watchdog(line)[0].time is None
    near_new_year = parse_watchdog(line, reference=datetime(2025, 12, 31, 23, 0, tzinfo=UTC))[0]
    assert near_new_year.time == datetime(2026, 1, 2, 0, 0, 1, tzinfo=UTC)
