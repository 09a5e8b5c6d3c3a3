"""Structured training logs: HF Trainer `trainer_state.json`, Megatron CI golden-values JSON,
Lightning CSVLogger `metrics.csv`, and generic JSON lines / CSV with a column mapping.

A whole-document JSON cut short, or nested too deeply to read, is a ParseError with its line.
A JSON-lines or CSV log that ends inside its last line (no line end) does not hand that line's
numbers on: a JSON line that does not parse, and any CSV row, is dropped with a note.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.trainlog.model import CANONICAL, Event, LineError, StepTable, TrainLog

STRUCT_FORMATS = ("hf-trainer-state", "megatron-golden-json", "lightning-csv", "jsonl", "csv")

# Targets a column mapping may name (besides the canonical columns): converted on the way in.
UNIT_TARGETS: dict[str, tuple[str, float]] = {"step_time_ms": ("step_time_s", 1e-3)}

# Field names tried, in order, when no mapping is given.
GUESSES: dict[str, tuple[str, ...]] = {
    "step": ("step", "global_step", "iteration", "iter", "trainer/global_step", "_step"),
    "loss": (
        "loss",
        "train_loss",
        "train/loss",
        "lm loss",
        "lm_loss",
        "reduced_train_loss",
        "loss/train/total",
    ),
    "step_time_s": (
        "step_time_s",
        "step_time",
        "train_step_timing",
        "iteration_time",
        "iteration-time",
        "time/secs_per_step",
    ),
    "step_time_ms": ("step_time_ms", "elapsed_time_per_iteration_ms"),
    "lr": ("lr", "learning_rate", "train/lr", "lr-AdamW", "lr-Adam"),
    "grad_norm": ("grad_norm", "train/grad_norm"),
    "consumed_samples": ("consumed_samples", "samples"),
    "consumed_tokens": ("consumed_tokens", "tokens"),
    "global_batch_size": ("global_batch_size",),
    "loss_scale": ("loss_scale",),
    "tokens_per_s": ("tps", "tokens_per_s", "tokens_per_second"),
    "samples_per_s": ("samples_per_s", "samples_per_second"),
    "rank": ("rank",),
}


def _float(value: Any) -> float:
    if value is None or value == "":
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return math.nan


def _is_nan_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "infinity")


def resolve_mapping(
    names: Collection[str], columns: Mapping[str, str] | None, source: str
) -> dict[str, tuple[str, float]]:
    """Field name → (column, factor); `columns` maps canonical target → field name."""
    out: dict[str, tuple[str, float]] = {}
    if columns:
        for target, fieldname in columns.items():
            col, factor = UNIT_TARGETS.get(target, (target, 1.0))
            if col not in CANONICAL or col == "segment":
                allowed = ", ".join(c for c in (*CANONICAL, *UNIT_TARGETS) if c != "segment")
                raise ParseError(source, 0, target, f"a column target among {allowed}")
            out[fieldname] = (col, factor)
    else:
        for target, candidates in GUESSES.items():
            col, factor = UNIT_TARGETS.get(target, (target, 1.0))
            if any(c == col for c, _ in out.values()):
                continue
            for cand in candidates:
                if cand in names:
                    out[cand] = (col, factor)
                    break
    if not any(col == "step" for col, _ in out.values()):
        raise ParseError(source, 1, ",".join(list(names)[:12]), "a step field (map one with --column step=FIELD)")
    return out


def _fields(record: Mapping[str, Any], mapping: Mapping[str, tuple[str, float]]) -> dict[str, float]:
    fields: dict[str, float] = {}
    for name, (col, factor) in mapping.items():
        if name in record:
            value = _float(record[name])
            if not math.isnan(value) or _is_nan_text(record[name]):
                fields[col] = value * factor
    return fields


def _finish(
    fmt: str,
    source: str,
    table: StepTable,
    events: list[Event],
    notes: list[str],
    errors: tuple[LineError, ...] = (),
) -> TrainLog:
    return TrainLog(fmt, source, table.columns(), tuple(events), (), tuple(notes), errors)


def _whole_step(value: float) -> int:
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"step {value!r} is not a whole number")
    return int(value)


def _add(table: StepTable, events: list[Event], fields: dict[str, float], line: int, merge: bool = False) -> None:
    """Add one record; ValueError/OverflowError when its step is not a whole number in range."""
    step = _whole_step(fields.pop("step"))
    rank = fields.pop("rank", None)
    rank_i = None if rank is None or math.isnan(rank) else int(rank)
    loss = fields.get("loss")
    if loss is not None and not math.isfinite(loss):
        fields["nan"] = 1.0
    added = True if merge and table.merge_last(step, fields) else table.add(step, fields, rank_i)
    if added and loss is not None and not math.isfinite(loss):
        events.append(Event("nan", step, line, f"loss {loss}"))


# ---------------------------------------------------------------------- whole-document JSON
class _Lines:
    """Lines passed through, remembering whether any had its line end and whether the last had."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        self.ended = False
        self.last_ended = True

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.last_ended = line.endswith(("\n", "\r"))
            self.ended = self.ended or self.last_ended
            yield line

    @property
    def cut(self) -> bool:
        """The input ends inside its last line (and is a file's lines, not lines split beforehand)."""
        return self.ended and not self.last_ended


def _dropped(lineno: int, line: str) -> str:
    return f"line {lineno}: the log ends inside this line (no line end): dropped: {line.strip()[:100]}"


def parse_json_document(text: str, source: str, keep: Collection[str] | None) -> TrainLog:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        bad = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
        cut = " (the document ends early: cut short?)" if exc.pos >= len(text.rstrip()) else ""
        raise ParseError(source, exc.lineno, bad, f"valid JSON ({exc.msg}){cut}") from exc
    except RecursionError:
        raise ParseError(source, 1, text.lstrip()[:80], "a JSON document (this one nests too deeply)") from None
    try:
        if isinstance(doc, dict) and isinstance(doc.get("log_history"), list):
            return _hf_state(doc, source, keep)
        if (
            isinstance(doc, dict)
            and doc
            and all(isinstance(v, dict) and isinstance(v.get("values"), dict) for v in doc.values())
        ):
            return _golden(doc, source, keep)
    except (ValueError, TypeError, OverflowError, AttributeError, KeyError) as exc:
        raise ParseError(source, 1, str(exc)[:120], "the fields of the document with their documented types") from None
    first = text.lstrip()[:120]
    raise ParseError(source, 1, first, "an HF trainer_state.json (log_history) or Megatron golden-values JSON")


def _hf_state(doc: dict[str, Any], source: str, keep: Collection[str] | None) -> TrainLog:
    table = StepTable(keep)
    events: list[Event] = []
    notes: list[str] = []
    for entry in doc["log_history"]:
        if not isinstance(entry, dict) or "step" not in entry:
            continue
        step = int(entry["step"])
        if "loss" in entry:
            fields = {"step": float(step), "loss": _float(entry["loss"])}
            for src, dst in (("learning_rate", "lr"), ("grad_norm", "grad_norm"), ("epoch", "epoch")):
                if src in entry:
                    fields[dst] = _float(entry[src])
            _add(table, events, fields, 0)
        elif "eval_loss" in entry:
            events.append(Event("eval", step, 0, f"eval_loss {entry['eval_loss']}"))
        elif "train_runtime" in entry:
            notes.append(f"train_runtime {entry['train_runtime']} s (includes evaluation; not a step time)")
    if "global_step" in doc:
        events.append(Event("checkpoint_save", int(doc["global_step"]), 0, "trainer_state.json global_step"))
    if doc.get("logging_steps"):
        notes.append(f"loss is the mean over logging_steps={doc['logging_steps']}")
    return _finish("hf-trainer-state", source, table, events, notes)


def _golden(doc: dict[str, Any], source: str, keep: Collection[str] | None) -> TrainLog:
    metrics = {"lm loss": "loss", "iteration-time": "step_time_s"}
    series = {col: doc[name]["values"] for name, col in metrics.items() if name in doc}
    steps = sorted({int(k) for values in series.values() for k in values})
    table = StepTable(keep)
    events: list[Event] = []
    for step in steps:
        fields = {"step": float(step)}
        for col, values in series.items():
            if str(step) in values:
                fields[col] = _float(values[str(step)])
        _add(table, events, fields, 0)
    notes = [f"{name}: every {doc[name].get('step_interval')} steps" for name in metrics if name in doc]
    return _finish("megatron-golden-json", source, table, events, notes)


# ---------------------------------------------------------------------- line-structured
def parse_jsonl(
    lines: Iterable[str],
    source: str,
    columns: Mapping[str, str] | None,
    keep: Collection[str] | None,
    first_line: int = 1,
) -> TrainLog:
    table = StepTable(keep)
    events: list[Event] = []
    notes: list[str] = []
    errors: list[LineError] = []
    mapping: dict[str, tuple[str, float]] | None = None
    stream = _Lines(lines)
    for lineno, raw in enumerate(stream, start=first_line):
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            if stream.cut:
                notes.append(_dropped(lineno, line))
                errors.append(LineError(lineno, line[:500]))
                break
            raise ParseError(source, lineno, line, "one JSON object per line") from exc
        if not isinstance(record, dict):
            raise ParseError(source, lineno, line, "one JSON object per line")
        if "global_step/max_steps" in record:
            record["global_step"] = str(record["global_step/max_steps"]).split("/")[0]
        if mapping is None:
            mapping = resolve_mapping(list(record), columns, source)
        fields = _fields(record, mapping)
        if "step" not in fields or len(fields) == 1:
            continue  # an eval or summary record
        try:
            _add(table, events, fields, lineno)
        except (ValueError, OverflowError) as exc:
            raise ParseError(source, lineno, line, f"a whole-number step ({exc})") from None
    return _finish("jsonl", source, table, events, notes, tuple(errors))


def _csv_rows(lines: Iterable[str], source: str, first_line: int) -> Iterator[list[str]]:
    """CSV rows; a line the csv module cannot split (a stray carriage return, a NUL) is a ParseError."""
    reader = csv.reader(line.rstrip("\r\n") for line in lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ParseError(source, first_line + reader.line_num - 1, "", f"CSV rows ({exc})") from None
        yield row


def parse_csv(
    lines: Iterable[str],
    source: str,
    columns: Mapping[str, str] | None,
    keep: Collection[str] | None,
    *,
    lightning: bool,
    first_line: int = 1,
) -> TrainLog:
    """CSV with a header. Lightning's sparse rows sharing a step are merged into one; its
    `epoch_time` (a user-logged epoch duration) becomes a per-step time over the epoch."""
    stream = _Lines(lines)
    rows = _csv_rows(stream, source, first_line)
    header = next(rows, None)
    if not header:
        raise ParseError(source, first_line, "", "a CSV header line")
    mapping = resolve_mapping(header, columns if columns else None, source)
    if lightning and not columns:
        for name in ("train_loss_step", "train_loss", "loss"):
            if name in header:
                mapping = {k: v for k, v in mapping.items() if v[0] != "loss"}
                mapping[name] = ("loss", 1.0)
                break
    index = {name: i for i, name in enumerate(header)}
    epoch_time = index.get("epoch_time") if lightning else None
    table = StepTable(keep)
    events: list[Event] = []
    last_epoch_end: int | None = None
    dropped: list[str] = []
    errors: list[LineError] = []
    for lineno, row in enumerate(rows, start=first_line + 1):
        if not row:
            continue
        if stream.cut:  # the last row, without its line end: its last number may be cut
            dropped.append(_dropped(lineno, ",".join(row)))
            errors.append(LineError(lineno, ",".join(row)[:500]))
            break
        if len(row) != len(header):
            raise ParseError(source, lineno, ",".join(row), f"{len(header)} fields as in the header")
        record = dict(zip(header, row, strict=True))
        fields = _fields(record, mapping)
        if "step" not in fields:
            continue
        try:
            if epoch_time is not None and row[epoch_time]:
                step = _whole_step(fields["step"])
                span = step - last_epoch_end if last_epoch_end is not None else step + 1
                if span > 0:
                    fields["step_time_s"] = _float(row[epoch_time]) / span
                last_epoch_end = step
            _add(table, events, fields, lineno, merge=lightning)
        except (ValueError, OverflowError) as exc:
            raise ParseError(source, lineno, ",".join(row), f"a whole-number step ({exc})") from None
    notes = ["step_time_s is epoch_time / steps in the epoch"] if epoch_time is not None else []
    return _finish("lightning-csv" if lightning else "csv", source, table, events, notes + dropped, tuple(errors))
