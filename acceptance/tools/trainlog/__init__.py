"""Training logs: detect the format, parse it into a `TrainLog`, and the `parse trainlog` CLI.

Formats: Megatron-LM, Megatron-DeepSpeed, GPT-NeoX, NeMo 2, torchtitan, nanoGPT, DeepSpeed
engine lines, HF Trainer (trainer_state.json and printed dicts), Megatron CI golden-values
JSON, Lightning CSVLogger metrics.csv, Megatron straggler lines, and generic JSON lines or
CSV with a column mapping. Pure: text in, records out (`parse_file` only opens the file).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.trainlog import fast as trainlog_fast
from acceptance.tools.trainlog.model import CANONICAL, Event, RankTimer, StepTable, TrainLog
from acceptance.tools.trainlog.patterns import ANSI, DETECTORS, MEGATRON, TEXT_FORMATS, subformat
from acceptance.tools.trainlog.struct import (
    STRUCT_FORMATS,
    UNIT_TARGETS,
    parse_csv,
    parse_json_document,
    parse_jsonl,
)
from acceptance.tools.trainlog.text import TextLogParser

__all__ = [
    "FORMATS",
    "Event",
    "RankTimer",
    "StepTable",
    "TrainLog",
    "add_parse_options",
    "parse",
    "parse_cli",
    "parse_columns",
    "parse_file",
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
    Raises ParseError when nothing in the input is a recognised training-log record.
    """
    if format is not None and format not in FORMATS:
        raise ParseError(source, 0, format, "a format among " + ", ".join(FORMATS))
    it = iter(lines)
    head: list[str] = []
    if format is None:
        format, head = _detect(it, source, columns)
    stream: Iterator[str] = itertools.chain(head, it)
    if format in ("hf-trainer-state", "megatron-golden-json") or format == "json":
        return parse_json_document("".join(_with_newlines(stream)), source, keep)
    if format == "jsonl":
        return parse_jsonl(stream, source, columns, keep)
    if format in ("csv", "lightning-csv"):
        return parse_csv(stream, source, columns, keep, lightning=format == "lightning-csv")
    if keep is not None and trainlog_fast.usable(format, keep):
        log = trainlog_fast.parse_fast(stream, format, source, keep)
    else:
        log = TextLogParser(format, source, keep).run(stream)
    if len(log) == 0 and not log.timers and not log.events:
        raise ParseError(source, 0, "", f"at least one {format} record")
    return log


def _with_newlines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


def _detect(it: Iterator[str], source: str, columns: Mapping[str, str] | None) -> tuple[str, list[str]]:
    """Read lines until one identifies the format; return it with the lines read so far."""
    head: list[str] = []
    first: tuple[int, str] | None = None
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
        for name, pattern in DETECTORS:
            if pattern.search(line):
                if name == "megatron-straggler":
                    return _straggler_or_megatron(it, head)
                return subformat(name, line), head
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
        except json.JSONDecodeError:
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


def parse_file(
    path: str | Path,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    *,
    keep: Collection[str] | None = None,
) -> TrainLog:
    """Open and parse one log file (`-` reads standard input)."""
    if str(path) == "-":
        return parse(sys.stdin, "<stdin>", format, columns, keep=keep)
    try:
        if keep is not None:
            log = _parse_file_fast(path, format, columns, keep)
            if log is not None:
                return log
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse(handle, str(path), format, columns, keep=keep)
    except OSError as exc:
        raise ParseError(str(path), 0, "", f"a readable file ({exc.strerror})") from exc


def _parse_file_fast(
    path: str | Path, format: str | None, columns: Mapping[str, str] | None, keep: Collection[str]
) -> TrainLog | None:
    """The bulk path straight from the file's bytes (no line objects); None when it does not apply."""
    if format is None:
        with open(path, encoding="utf-8", errors="replace") as handle:
            format, _ = _detect(iter(handle), str(path), columns)
    if not trainlog_fast.usable(format, keep):
        return None
    with open(path, "rb") as raw:
        log = trainlog_fast.parse_binary(raw, format, str(path), keep)
    if len(log) == 0 and not log.timers and not log.events:
        raise ParseError(str(path), 0, "", f"at least one {format} record")
    return log


# ---------------------------------------------------------------------- CLI
def parse_columns(items: Iterable[str] | None) -> dict[str, str] | None:
    """`--column name=field` options → mapping; None when none given."""
    if not items:
        return None
    out: dict[str, str] = {}
    allowed = [c for c in (*CANONICAL, *UNIT_TARGETS) if c != "segment"]
    for item in items:
        name, sep, fieldname = item.partition("=")
        if not sep or not fieldname or name not in allowed:
            raise ParseError("--column", 0, item, "NAME=FIELD with NAME among " + ", ".join(allowed))
        out[name] = fieldname
    return out


def add_parse_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=FORMATS, default=None, help="skip detection: the log's format")
    parser.add_argument(
        "--column",
        action="append",
        default=None,
        metavar="NAME=FIELD",
        help="generic JSONL/CSV: which field holds a column (e.g. step=iteration, step_time_ms=dt)",
    )


def parse_cli(path: Path, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    log = parse_file(path, getattr(args, "format", None), parse_columns(getattr(args, "column", None)))
    return log.to_json(), 0 if log.status() == "ok" else 1
