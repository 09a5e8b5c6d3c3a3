"""PyTorch c10d / torchrun logs of ../shared/corpus-wave3/watchdog, facts read by hand from each file, and
properties over every watchdog / launcher corpus file (wave 2 and 3): paste prefixes, indentation, CRLF
line ends and two ranks' interleaved lines change no fact."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance.tools import launcher, logtime, torchlogs
from tests.shared import wave2_files, wave3, wave3_files

W = "watchdog"
TIMEOUT = "watchdog-timeout"
STATUS = "watchdog-status"

# Per file: the watchdog timeouts (global rank, line, op, SeqNum, Timeout(ms), ran for (ms), time), read by hand.
TIMEOUTS: dict[str, list[tuple[Any, ...]]] = {
    "torch-1.13-2.0-watchdog-seqnum1-allreduce-numel2-hard-wrapped-184-cols-flashy-dora.log": [
        (0, 2, "ALLREDUCE", 1, 1800000, 1800646, None),  # wrapped "mil" / "liseconds" at 184 columns
        (0, 7, "ALLREDUCE", 1, 1800000, 1800646, None),  # "NumelI" / "n=2"
        (0, 10, "ALLREDUCE", 1, 1800000, 1800646, None),  # ", T" / "imeout(ms)"
    ],
    "torch-2.1-trl-ppo-interleaved-python-traceback-and-cpp-what-two-ranks-allgather-base-numel2.log": [
        (2, 1, "_ALLGATHER_BASE", 31, 1800000, 1800693, None),
        (1, 7, "_ALLGATHER_BASE", 31, 1800000, 1800334, None),
    ],
    "torch-2.4-pg0-default-pg-naming-E814-timeout-5400000-allgather-base-deepspeed-simpletuner.log": [
        (0, 3, "_ALLGATHER_BASE", 357826, 5400000, 5400036, None),  # E814: no full date in the file, no year
    ],
    "torch-2.9-py3.13-log-tail-starts-mid-line-scatter-timeout-watchdog-runloop-childfailed-signal-names-8xh100.log": [
        (1, 2, "SCATTER", 78, 1800000, 1800009, None),
        (6, 21, "SCATTER", 78, 1800000, 1800043, datetime(2026, 6, 28, 9, 54, 15, 886208)),  # E628 = 28 June
        (6, 32, "SCATTER", 78, 1800000, 1800043, None),
    ],
    "ray-verl-wallclock-and-worker-prefix-rank15-vs-pg-rank1-mesh-tp-E510-truncated.log": [
        (15, 1, "BROADCAST", 3, 1800000, 1800041, datetime(2025, 5, 10, 0, 18, 19, 328053)),  # rank15, not Rank 1
    ],
    "ray-easyr1-workerdict-prefix-tqdm-loading-shards-seqnum1-last-completed-minus1-E519.log": [
        (4, 9, "ALLREDUCE", 1, 600000, 600015, None),  # E519, no year anywhere in the file
    ],
    "ray-simplerl-actor-prefix-with-ip-logging-cc-unhandled-exception-mangled-N3c1016DistBackendErrorE.log": [
        (5, 1, "_ALLGATHER_BASE", 1495581, 1800000, 1800036, datetime(2025, 2, 3, 10, 34, 3, 841000)),
    ],
    "sglang-tp-prefix-loading-shards-E207-hard-wrapped-numelout-seqnum2-multinode.log": [
        (6, 13, "ALLREDUCE", 2, 600000, 600050, datetime(2025, 2, 7, 1, 29, 36, 730311)),  # "Nume" / "lOut" joined
    ],
    "torch-1.10-1.11-ncclSystemError-unhandled-system-error-2.10.3-elastic-logging-prefix-exitcode-6-accelerate.log": [
        # an NCCL error, no timeout
    ],
    "torchtitan-training-completed-then-sigabrt-at-exit-childfailed-8-space-indented-mkdocs.log": [],
    "nccl-warn-ib-plugin-status12-vendor-err-129-ipv6-gids-remoteGids-no-space-progress-thread.log": [],
}
# Per file: (kind, rank, SeqNum) of the watchdog status lines.
STATUSES = {
    "torch-2.4-pg0-default-pg-naming-E814-timeout-5400000-allgather-base-deepspeed-simpletuner.log": [
        (0, 357826),
        (0, 357826),
    ],
    "ray-verl-wallclock-and-worker-prefix-rank15-vs-pg-rank1-mesh-tp-E510-truncated.log": [(15, 3)],
    "ray-easyr1-workerdict-prefix-tqdm-loading-shards-seqnum1-last-completed-minus1-E519.log": [(4, 1)],
}
# Per file: the exception classes of the aborts, in log order.
ABORTS = {
    "torch-1.10-1.11-ncclSystemError-unhandled-system-error-2.10.3-elastic-logging-prefix-exitcode-6-accelerate.log": [
        "std::runtime_error"
    ],
    "torch-1.13-2.0-watchdog-seqnum1-allreduce-numel2-hard-wrapped-184-cols-flashy-dora.log": ["std::runtime_error"],
    "torch-2.1-trl-ppo-interleaved-python-traceback-and-cpp-what-two-ranks-allgather-base-numel2.log": [
        "std::runtime_error"
    ],
    "torch-2.9-py3.13-log-tail-starts-mid-line-scatter-timeout-watchdog-runloop-childfailed-signal-names-8xh100.log": [
        "c10::DistBackendError",  # line 1 lost "terminate" to the log tail's cut
        "c10::DistBackendError",
    ],
    "ray-simplerl-actor-prefix-with-ip-logging-cc-unhandled-exception-mangled-N3c1016DistBackendErrorE.log": [
        "c10::DistBackendError"  # demangled from N3c1016DistBackendErrorE
    ],
}
T29 = "torch-2.9-py3.13-log-tail-starts-mid-line-scatter-timeout-watchdog-runloop-childfailed-signal-names-8xh100.log"
TITAN = "torchtitan-training-completed-then-sigabrt-at-exit-childfailed-8-space-indented-mkdocs.log"
T110 = "torch-1.10-1.11-ncclSystemError-unhandled-system-error-2.10.3-elastic-logging-prefix-exitcode-6-accelerate.log"
T113 = "torch-1.13-2.0-watchdog-seqnum1-allreduce-numel2-hard-wrapped-184-cols-flashy-dora.log"
NCCLWARN = "nccl-warn-ib-plugin-status12-vendor-err-129-ipv6-gids-remoteGids-no-space-progress-thread.log"


def _parse(name: str) -> torchlogs.TorchLog:
    return torchlogs.parse(wave3(W, name), name)


def _aborts(log: torchlogs.TorchLog) -> list[str]:
    return [e.text.split("'")[1] for e in log.errors if e.kind == "abort"]


def test_the_table_covers_every_wave3_watchdog_file() -> None:
    files = wave3_files(W)
    if not files:
        pytest.skip("../shared/corpus-wave3 is absent")
    assert sorted(p.name for p in files) == sorted(TIMEOUTS)


@pytest.mark.parametrize("name", sorted(TIMEOUTS))
def test_watchdog_facts_read_by_hand(name: str) -> None:
    log = _parse(name)
    assert log.recognised
    got = [(e.rank, e.line, e.op, e.seq, e.timeout_ms, e.elapsed_ms, e.time) for e in log.errors if e.kind == TIMEOUT]
    assert got == TIMEOUTS[name]
    assert [(e.rank, e.seq) for e in log.errors if e.kind == STATUS] == STATUSES.get(name, [])
    assert _aborts(log) == ABORTS.get(name, [])


def test_c10_dates_without_zero_padding_and_the_agent_s_padded_ones_in_one_file() -> None:
    log = _parse(T29)
    assert log.year == 2026  # from the summary's 2026-06-28_09:59:18
    assert [e.time for e in log.errors if e.rank == 6 and e.kind == "note"] == [
        datetime(2026, 6, 28, 9, 54, 15, 885613),
        datetime(2026, 6, 28, 9, 54, 15, 885638),
    ]
    assert [(a.kind, a.pid, a.time) for a in log.agent][::7] == [
        ("sigterm", 1798, datetime(2026, 6, 28, 9, 59, 16, 486000)),
        ("worker-failed", 1801, datetime(2026, 6, 28, 9, 59, 18, 10000)),
    ]
    assert log.yearless == 3 + 8  # three c10d error lines, eight agent lines: all dated with the log's year


@pytest.mark.parametrize(
    ("stamp", "year", "expected"),
    [
        ("E626 06:24:44.903881913", 2026, datetime(2026, 6, 26, 6, 24, 44, 903881)),
        ("E1206 06:24:44.903881913", 2026, datetime(2026, 12, 6, 6, 24, 44, 903881)),
        ("E207 01:29:36.730311765", 2025, datetime(2025, 2, 7, 1, 29, 36, 730311)),
        ("W0608 19:04:45.351000", 2026, datetime(2026, 6, 8, 19, 4, 45, 351000)),
        ("E1218 20:27:21.426415540", 2025, datetime(2025, 12, 18, 20, 27, 21, 426415)),
        ("E1306 06:24:44.9", 2026, None),  # no 13th month
        ("E626 06:24:44.9", None, None),  # never a guessed year
    ],
)
def test_glog_dates_padded_or_not(stamp: str, year: int | None, expected: datetime | None) -> None:
    assert logtime.parse_glog(stamp, year) == expected


def test_a_c10_line_without_any_year_in_the_log_stays_undated_and_is_counted() -> None:
    log = _parse("ray-easyr1-workerdict-prefix-tqdm-loading-shards-seqnum1-last-completed-minus1-E519.log")
    assert log.year is None
    assert {e.time for e in log.errors} == {None}
    assert log.yearless == 3
    dated = torchlogs.parse(
        wave3(W, "ray-easyr1-workerdict-prefix-tqdm-loading-shards-seqnum1-last-completed-minus1-E519.log"), year=2025
    )
    assert dated.errors[0].time == datetime(2025, 5, 19, 4, 35, 55, 111951)


def test_torchrun_summary_with_signal_names_skips_the_root_cause_rank() -> None:
    log = _parse(T29)
    host = "gpu-dev-12542fe0"
    assert [(f.rank, f.local_rank, f.host, f.exitcode, f.pid, f.root_cause) for f in log.failures] == [
        (0, 0, host, -15, 1798, False),
        *[(r, r, host, -6, 1798 + r, False) for r in (1, 2, 4, 5, 6, 7)],  # pid 1798 + local rank
        (3, 3, host, -6, 1801, True),
    ]
    root = log.failures[-1]
    assert root.time == datetime(2026, 6, 28, 9, 59, 16) < log.failures[0].time
    assert {f.script for f in log.failures} == {"torchinferno.openai_server"}


def test_torchtitan_8_space_indented_summary_and_agent_lines() -> None:
    log = _parse(TITAN)
    assert [(f.rank, f.local_rank, f.host, f.exitcode, f.pid, f.root_cause, f.time) for f in log.failures] == [
        (1, 1, "ee-tiamat.ee.ic.ac.uk", -6, 3016739, True, datetime(2025, 4, 1, 0, 26, 6))
    ]
    assert [(a.kind, a.pid, a.exitcode, a.local_rank, a.time) for a in log.agent] == [
        ("sigterm", 3016738, None, None, datetime(2025, 4, 1, 0, 26, 6, 901000)),
        ("worker-failed", 3016739, -6, 1, datetime(2025, 4, 1, 0, 26, 8, 212000)),
    ]
    assert log.errors == ()  # "terminate called without an active exception" after success is no NCCL failure


def test_old_elastic_logging_prefix_and_the_nccl_system_error() -> None:
    log = _parse(T110)
    assert [(e.kind, e.line, e.nccl_version) for e in log.errors] == [
        ("note", 1, None),
        ("abort", 2, None),
        ("nccl-error", 3, "2.10.3"),
    ]
    assert log.errors[2].text.startswith("NCCL error: unhandled system error, NCCL version 2.10.3 / ncclSystemError:")
    assert [(a.kind, a.pid, a.exitcode, a.local_rank) for a in log.agent] == [
        ("sigterm", 518, None, None),
        ("sigterm", 519, None, None),
        ("sigterm", 520, None, None),
        ("worker-failed", 517, -6, 0),
    ]


def test_hard_wrap_at_184_columns_joined_and_the_uncertain_one_reported() -> None:
    log = _parse(T113)
    assert log.errors[0].text.endswith("ran for 1800646 milliseconds before timing out.")
    assert log.notes == (
        "line 4: 183 characters, one short of the wrap width 184, and line 5 may continue it; not joined",
    )


def test_nccl_warn_lines_with_a_file_line_token_name_their_host() -> None:
    log = _parse(NCCLWARN)
    assert [(e.kind, e.host, e.line) for e in log.errors] == [
        ("nccl-warn", "kp-ddp-worker-0", 1),
        ("nccl-warn", "kp-ddp-worker-0", 6),
        ("nccl-warn", "kp-ddp-worker-0", 11),
    ]
    assert "10.216.210.236<54862>" in log.errors[0].text


# --- class 2: prefixes and paste damage, on shapes the corpus lacks -------------------------------------------

C10 = (
    "[rank5]:[E602 10:11:12.123456789 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600123 "
    "milliseconds before timing out."
)


def _timeouts(text: str, year: int | None = 2026) -> list[tuple[Any, ...]]:
    log = torchlogs.parse(text, year=year)
    return [(e.rank, e.seq, e.op, e.timeout_ms, e.elapsed_ms, e.time) for e in log.errors if e.kind == TIMEOUT]


EXPECTED = [(5, 42, "ALLREDUCE", 600000, 600123, datetime(2026, 6, 2, 10, 11, 12, 123456))]


@pytest.mark.parametrize(
    "prefix",
    ["[80746] ", "    ", "        ", "\t", "\t\t", "> ", "> > ", "`", "(WorkerDict pid=12) ",
     "(RayTrainWorker pid=9, ip=10.0.0.1) ", "[2026-06-02 10:11:14] ", "2026-06-02T10:11:14.123456789Z ",
     "[2026-06-02 10:11:14] (WorkerDict pid=12) "],
)  # fmt: skip
def test_a_consistent_paste_prefix_is_stripped(prefix: str) -> None:
    assert _timeouts(prefix + C10 + "\n") == EXPECTED


def test_a_line_glued_to_a_tqdm_bar_is_found_where_it_starts() -> None:
    bar = " 24%|██▍       | 24/100 [00:30<01:30,  2.88s/it]"
    assert _timeouts(bar + C10 + "\n") == EXPECTED


def test_a_wrap_that_the_next_line_does_not_continue_is_reported_and_read_as_far_as_it_goes() -> None:
    cut = C10[: C10.index("Timeout(ms)") + 14]  # "Timeout(ms)=60" - no figure that could be truncated
    log = torchlogs.parse(cut + "\n" + "frame #0: c10::Error::Error() + 0x9d\n", year=2026)
    assert [(e.seq, e.op, e.timeout_ms, e.elapsed_ms) for e in log.errors] == [(42, "ALLREDUCE", None, None)]
    assert log.notes == (
        "line 1: the watchdog record is cut at the line's end and line 2 does not continue it; read as far as it goes",
    )


def test_a_wrap_inside_a_field_of_a_prefixed_line_is_joined() -> None:
    cut = C10.index("NumelOut") + 4
    assert _timeouts(C10[:cut] + "\n" + C10[cut:] + "\n") == EXPECTED


# --- class 3: torchrun summaries pasted from the middle --------------------------------------------------------

ROOT_ONLY = """Root Cause (first observed failure):
[0]:
  time      : 2026-06-08_19:04:45
  host      : node-7.example
  rank      : 12 (local_rank: 4)
  exitcode  : -6 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 4242
======================================================
"""
ENTRIES = """[1]:
  time      : 2026-06-08_19:04:46
  host      : node-3.example
  rank      : 5 (local_rank: 5)
  exitcode  : -15 (pid: 99)  (SIGTERM)
[2]:
  host      : node-4.example
  rank      : 9 (local_rank: 1)
  exitcode  : 1 (pid: 100)
"""


def _failures(text: str) -> list[tuple[Any, ...]]:
    return [(f.rank, f.local_rank, f.host, f.exitcode, f.pid, f.root_cause) for f in torchlogs.parse(text).failures]


def test_a_root_cause_block_without_the_header_is_still_the_root_cause() -> None:
    assert _failures(ROOT_ONLY) == [(12, 4, "node-7.example", -6, 4242, True)]
    assert torchlogs.parse(ROOT_ONLY).ranks[0].host == "node-7.example"


def test_entries_without_the_header_are_the_failed_ranks() -> None:
    assert _failures(ENTRIES) == [(5, 5, "node-3.example", -15, 99, False), (9, 1, "node-4.example", 1, 100, False)]


def test_a_paste_that_starts_inside_an_entry() -> None:
    text = "  host      : node-3.example\n  rank      : 5 (local_rank: 5)\n  exitcode  : -15 (pid: 99)\n"
    assert _failures("> " + text.replace("\n", "\n> ").rstrip("> ")) == [(5, 5, "node-3.example", -15, 99, False)]


def test_field_like_lines_of_other_logs_are_no_failure() -> None:
    assert _failures("host: build-7\nrank: 3\ntime: 12.5 s\n") == []


# --- properties over every corpus file --------------------------------------------------------------------------


def _corpus() -> list[Path]:
    return [*wave3_files(W), *wave2_files("pytorch-nccl-watchdog"), *wave2_files("launcher-mpirun-srun")]


def _facts(log: torchlogs.TorchLog, lines: bool = True) -> dict[str, Any]:
    return {
        "errors": [
            (e.kind, e.text, e.rank, e.host, e.time, e.op, e.seq, e.timeout_ms, e.elapsed_ms, e.nccl_version)
            + ((e.line,) if lines else ())
            for e in log.errors
        ],
        "ranks": [(r.rank, r.host, r.source, r.local_rank, r.device, r.pid) for r in log.ranks],
        "failures": [(f.rank, f.host, f.exitcode, f.pid, f.time, f.root_cause, f.script) for f in log.failures],
        "agent": [(a.kind, a.pid, a.exitcode, a.local_rank, a.time) for a in log.agent],
        "world": log.world_size,
        "versions": log.nccl_versions,
    }


def _ids(paths: list[Path]) -> list[str]:
    return [p.name[:40] for p in paths]


CORPUS_FILES = _corpus()


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _need() -> None:
    if not CORPUS_FILES:
        pytest.skip("../shared corpora are absent")


@pytest.mark.parametrize("prefix", ["    ", "        ", "\t", "> ", "[123] ", "(WorkerDict pid=7) "])
@pytest.mark.parametrize("path", CORPUS_FILES, ids=_ids(CORPUS_FILES))
def test_a_consistent_prefix_on_every_line_changes_no_fact(path: Path, prefix: str) -> None:
    text = _read(path)
    year = logtime.first_year(text)
    plain = torchlogs.parse(text, year=year)
    prefixed = "".join(prefix + line for line in text.splitlines(keepends=True))
    assert _facts(torchlogs.parse(prefixed, year=year)) == _facts(plain)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=_ids(CORPUS_FILES))
def test_crlf_line_ends_change_no_fact(path: Path) -> None:
    text = _read(path)
    crlf = "\r\n".join(text.split("\n"))
    assert _facts(torchlogs.parse(crlf)) == _facts(torchlogs.parse(text))


def _tag(text: str, rank: int) -> list[str]:
    return [f"[rank{rank}]:{line}" for line in text.splitlines()]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=_ids(CORPUS_FILES))
def test_two_ranks_interleaved_change_no_per_rank_fact(path: Path) -> None:
    """Two ranks print the same log, each line behind its ``[rankN]:`` prefix, and the lines alternate: every
    error line of rank 900 reads as in rank 900's log alone (files that carry their own rank prefixes excepted:
    their ranks would collide)."""
    text = _read(path)
    if "[rank" in text:
        pytest.skip("the file carries rank prefixes of its own")
    year = logtime.first_year(text)
    a, b = _tag(text, 900), _tag(text, 901)
    alone = torchlogs.parse("\n".join(a) + "\n", year=year)
    mixed = [line for pair in zip(a, b, strict=True) for line in pair]
    both = torchlogs.parse("\n".join(mixed) + "\n", year=year)

    def rank(log: torchlogs.TorchLog, r: int) -> list[tuple[Any, ...]]:
        return [row for row in _facts(log, lines=False)["errors"] if row[2] == r]

    assert rank(both, 900) == rank(alone, 900)
    assert rank(both, 901) == [(*row[:2], 901, *row[3:]) for row in rank(alone, 900)]


RANKED = [p for p in CORPUS_FILES if "[rank" in _read(p)]
RANK = re.compile(r"\[rank(\d+)\]:")


@pytest.mark.parametrize("path", RANKED, ids=_ids(RANKED))
def test_moving_one_rank_s_lines_after_the_others_changes_none_of_its_facts(path: Path) -> None:
    """Files with their own ``[rankN]:`` prefixes: the first rank's lines (each with the unprefixed lines that
    follow it: a wrap's rest, a what() block) moved to the end of the log, their order kept: each rank's error
    lines are the same."""
    text = _read(path)
    blocks: list[tuple[int | None, list[str]]] = []
    for line in text.splitlines():
        found = RANK.search(line[:200])
        if found or not blocks:
            blocks.append((int(found.group(1)) if found else None, [line]))
        else:
            blocks[-1][1].append(line)
    rank = next(r for r, _ in blocks if r is not None)
    moved = [line for r, b in blocks if r != rank for line in b] + [line for r, b in blocks if r == rank for line in b]
    year = logtime.first_year(text)
    before = _facts(torchlogs.parse(text, year=year), lines=False)["errors"]
    after = _facts(torchlogs.parse("\n".join(moved) + "\n", year=year), lines=False)["errors"]
    for r in {e[2] for e in before} | {e[2] for e in after}:  # a what() block's own rank may sit in another's block
        assert sorted(repr(e) for e in after if e[2] == r) == sorted(repr(e) for e in before if e[2] == r)


def _launcher(text: str) -> list[tuple[Any, ...]]:
    return [(e.kind, e.host, e.rank, e.task, e.pid, e.signal, e.exit_code, e.line) for e in launcher.parse(text)]


@pytest.mark.parametrize("prefix", ["    ", "\t", "> ", "[123] ", "(WorkerDict pid=7) "])
@pytest.mark.parametrize("path", CORPUS_FILES, ids=_ids(CORPUS_FILES))
def test_launcher_lines_behind_a_consistent_prefix_or_with_crlf_read_the_same(path: Path, prefix: str) -> None:
    text = _read(path)
    prefixed = "".join(prefix + line for line in text.splitlines(keepends=True))
    assert _launcher(prefixed) == _launcher(text)
    assert _launcher("\r\n".join(text.split("\n"))) == _launcher(text)
