"""Training logs: detect the format and parse it into a `TrainLog`.

Formats: Megatron-LM, Megatron-DeepSpeed, GPT-NeoX, NeMo 2, torchtitan, nanoGPT, DeepSpeed
engine lines, HF Trainer (trainer_state.json and printed dicts), Megatron CI golden-values
JSON, Lightning CSVLogger metrics.csv, Megatron straggler lines, and generic JSON lines or
CSV with a column mapping.

The façade of `acceptance.tools.trainlog`. Pure: text in, records out. The caller opens the
file; `parse_binary` reads a long Megatron log from a binary file object the caller opened
(`acceptance parse trainlog` and its file reader live in `acceptance.cmd.parse_trainlog`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import BinaryIO

from acceptance.errors import ParseError
from acceptance.tools.trainlog import fast
from acceptance.tools.trainlog.model import CANONICAL, Event, LineError, RankTimer, StepTable, TrainLog
from acceptance.tools.trainlog.patterns import ANSI, DETECTORS, LOAD, MEGATRON, START_AT, TEXT_FORMATS, subformat
from acceptance.tools.trainlog.prefix import HEAD, common_prefix, strip_prefix
from acceptance.tools.trainlog.struct import (
    STRUCT_FORMATS,
    UNIT_TARGETS,
    parse_csv,
    parse_json_document,
    parse_jsonl,
)
from acceptance.tools.trainlog.text import TextLogParser

__all__ = [
    "CANONICAL",
    "FORMATS",
    "UNIT_TARGETS",
    "Event",
    "LineError",
    "RankTimer",
    "StepTable",
    "TrainLog",
    "bulk_usable",
    "detect",
    "line_prefix",
    "parse",
    "parse_binary",
]

FORMATS: tuple[str, ...] = TEXT_FORMATS + STRUCT_FORMATS
EXPECTED = "a training log (" + ", ".join(FORMATS) + ")"
_CSV_STEP_NAMES = ("step", "global_step", "iteration", "iter", "_step")


def parse(
    lines: Iterable[str],
    source: str = "<text>",
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    *,
    keep: Collection[str] | None = None,
) -> TrainLog:
    """Parse a training log given as lines (streamed; a whole-document JSON is read whole).

    `format` forces a format (one of FORMATS) instead of detecting it; `columns` maps
    canonical column names (step, loss, step_time_s, step_time_ms, lr, ...) to the fields
    of a generic JSON-lines or CSV log; `keep` restricts the columns kept (memory).
    A decoration on every line (markdown indentation or quoting, a comment marker) is taken off.
    Raises ParseError when nothing in the input is a recognised training-log record.
    """
    if format is not None and format not in FORMATS:
        raise ParseError(source, 0, format, "a format among " + ", ".join(FORMATS))
    rest = iter(lines)
    first = list(itertools.islice(rest, HEAD))
    decoration = common_prefix(first)
    if decoration:
        first = list(strip_prefix(first, decoration))
    head: list[str] = []
    stripped = False
    if format is None:
        tail = strip_prefix(rest, decoration) if decoration else rest
        format, head = _detect(itertools.chain(first, tail), source, columns)
        if len(head) > len(first):  # detection read past the first lines: go on from where it stopped
            first, rest, stripped = [], tail, True
    if decoration and not stripped and (decoration.strip() or format not in TEXT_FORMATS):
        rest = strip_prefix(rest, decoration)
    # (blanks before every line change no record of a text format: those lines are read as they are)
    stream: Iterator[str] = itertools.chain(head, first[len(head) :], rest)
    if format in ("hf-trainer-state", "megatron-golden-json") or format == "json":
        return parse_json_document("".join(_with_newlines(stream)), source, keep)
    if format == "jsonl":
        return parse_jsonl(stream, source, columns, keep)
    if format in ("csv", "lightning-csv"):
        return parse_csv(stream, source, columns, keep, lightning=format == "lightning-csv")
    if keep is not None and fast.usable(format, keep):
        log = fast.parse_fast(stream, format, source, keep)
    else:
        log = TextLogParser(format, source, keep).run(stream)
    if len(log) == 0 and not log.timers and not log.events:
        raise ParseError(source, 0, "", f"at least one {format} record")
    return log


def _undecorated(lines: Iterable[str]) -> Iterator[str]:
    """The lines without the decoration their first lines share."""
    it = iter(lines)
    first = list(itertools.islice(it, HEAD))
    decoration = common_prefix(first)
    raw = itertools.chain(first, it)
    return strip_prefix(raw, decoration) if decoration else raw


def _with_newlines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


# The framework a checkpoint-load line names (LOAD's groups in order), for a log with no step yet.
_LOAD_FORMATS = ("megatron-lm", "torchtitan", "hf-trainer-console", "deepspeed")


def _resume_format(line: str) -> str | None:
    """The format a checkpoint-load or `Training starts at step N` line belongs to, if any."""
    m = LOAD.search(line)
    if m:
        return next(f for f, g in zip(_LOAD_FORMATS, m.groups(), strict=True) if g is not None)
    return "torchtitan" if START_AT.search(line) else None


def _may_detect(line: str) -> bool:
    """False when no detector, `LOAD` or `START_AT` can match `line`: each of them needs one of these literals
    (iteration / iter N, step: / step= / global step / at step, [timer.py:, a brace, /Rnk:, checkpoint)."""
    return (
        "iter" in line or "step" in line or "timer.py" in line or "{" in line or "Rnk:" in line or "checkpoint" in line
    )


def _detect(it: Iterator[str], source: str, columns: Mapping[str, str] | None) -> tuple[str, list[str]]:
    """Read lines until one identifies the format; return it with the lines read so far.

    A log that loads a checkpoint but has no step line yet (a resumed run stopped or copied
    before its first step) is of the format its load line names: a valid log without steps."""
    head: list[str] = []
    first: tuple[int, str] | None = None
    resumed: str | None = None
    for raw in it:
        head.append(raw)
        line = ANSI.sub("", raw).strip() if "\x1b" in raw else raw.strip()
        if not line:
            continue
        if first is None:
            first = (len(head), line)
            structured = _structured(line, columns)
            if structured is not None:
                return structured, head
        if not _may_detect(line):  # most lines of a long non-training log (NCCL INFO): skip the regexes
            continue
        for name, pattern in DETECTORS:
            if pattern.search(line):
                if name == "megatron-straggler":
                    return _straggler_or_megatron(it, head)
                return subformat(name, line), head
        if resumed is None:
            resumed = _resume_format(line)
    if resumed is not None:
        return resumed, head
    if first is None:
        raise ParseError(source, 0, "", EXPECTED + "; the input is empty")
    raise ParseError(source, first[0], first[1], EXPECTED)


def _straggler_or_megatron(it: Iterator[str], head: list[str]) -> tuple[str, list[str]]:
    """Straggler lines come from Megatron runs: a later iteration line makes it megatron-lm."""
    for raw in it:
        head.append(raw)
        if MEGATRON.search(raw):
            return subformat("megatron-lm", raw), head
    return "megatron-straggler", head


def _structured(line: str, columns: Mapping[str, str] | None) -> str | None:
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if line.startswith(("{'", "{‘", "{’")):
                return None  # a printed Python dict (HF Trainer console), not JSON
            return "json"  # a document spread over lines (trainer_state.json)
        if isinstance(record, dict) and (
            "log_history" in record or any(isinstance(v, dict) and "values" in v for v in record.values())
        ):
            return "json"
        return "jsonl"
    if line.count(",") >= 1 and "|" not in line and ":" not in line:
        header = [h.strip() for h in line.split(",")]
        wanted = set(columns.values()) if columns else set(_CSV_STEP_NAMES)
        if wanted & set(header):
            return "lightning-csv" if "epoch" in header and "step" in header and not columns else "csv"
    return None


def detect(lines: Iterable[str], source: str = "<text>", columns: Mapping[str, str] | None = None) -> str:
    """The format of a log from its first lines (reads no further than it must); ParseError if none."""
    format, _ = _detect(_undecorated(lines), source, columns)
    return format


def line_prefix(lines: Iterable[str]) -> str:
    """The decoration every line of a log carries, from its first lines ("" when none): `parse`
    takes it off; `parse_binary` reads only logs without one."""
    return common_prefix(list(itertools.islice(lines, HEAD)))


def bulk_usable(format: str, keep: Collection[str] | None) -> bool:
    """Whether `parse_binary` can read a log of this format with these kept columns."""
    return fast.usable(format, keep)


def parse_binary(raw: BinaryIO, source: str, format: str, *, keep: Collection[str]) -> TrainLog:
    """The bulk path straight from bytes (no line objects) for a long Megatron log.

    `raw` is a log the caller opened in binary mode; it is read to its end in large blocks.
    The records are those `parse` gives for the same log read in text mode (UTF-8 with
    replacement, universal newlines). Only for `bulk_usable(format, keep)`.
    """
    if not fast.usable(format, keep):
        raise ValueError(f"the bulk path does not read {format} logs keeping {sorted(keep)}")
    log = fast.parse_binary(raw, format, source, keep)
    if len(log) == 0 and not log.timers and not log.events:
        raise ParseError(source, 0, "", f"at least one {format} record")
    return log
