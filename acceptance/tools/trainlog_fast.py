"""Fast path for long Megatron logs when the caller keeps only a few columns.

Lines are taken in chunks; a chunk made only of plain iteration records (no rank prefix,
no event line, steps strictly increasing, no NaN or skipped iterations) is parsed with one
regex scan per kept field over the whole chunk and appended in bulk. Any other chunk goes
through the line parser, so results are identical to the slow path.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable

import numpy as np

from acceptance.tools.trainlog_model import TrainLog
from acceptance.tools.trainlog_text import TextLogParser

_STEP = re.compile(r"iteration\s+(\d+)/\s*\d+\s*\|")
_TIME = re.compile(r"elapsed time per iteration \((ms|s)\):\s*([^\s|]+)")
_FIELD = {
    "loss": re.compile(r"lm[ _]loss:\s*([^\s|]+)"),
    "lr": re.compile(r"learning rate:\s*([^\s|]+)"),
    "consumed_samples": re.compile(r"consumed samples:\s*([^\s|]+)"),
    "global_batch_size": re.compile(r"global batch size:\s*([^\s|]+)"),
    "grad_norm": re.compile(r"grad norm:\s*([^\s|]+)"),
    "loss_scale": re.compile(r"loss scale:\s*([^\s|]+)"),
}
_NAN = re.compile(r"number of (?:nan|skipped) iterations:\s*[1-9]")
# Anything that needs the line parser: events, timers, colours, rank prefixes, quoting.
_HINTS = ("heckpoint", "Training starts", "Resuming", "validation loss", "/Rnk:", "\x1b")
_PREFIX = re.compile(r"\n[ \t]*(?:>|\[[A-Za-z_]*\d+\]:|\[[Rr]ank|\d+:\s)")
FAST_COLUMNS = frozenset({"step", "step_time_s", *_FIELD})
CHUNK = 20_000


def usable(fmt: str, keep: Collection[str] | None) -> bool:
    return fmt in ("megatron-lm", "megatron-deepspeed") and keep is not None and set(keep) <= FAST_COLUMNS


def _chunk_columns(
    text: str, n_lines: int, keep: Collection[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    if any(hint in text for hint in _HINTS) or _PREFIX.search("\n" + text) or _NAN.search(text):
        return None
    steps = np.array(_STEP.findall(text), dtype=np.int64)
    if len(steps) != n_lines or (len(steps) > 1 and not (np.diff(steps) > 0).all()):
        return None
    columns: dict[str, np.ndarray] = {}
    for name in keep:
        if name == "step":
            continue
        if name == "step_time_s":
            found = _TIME.findall(text)
            if len(found) != n_lines:
                return None
            units = {u for u, _ in found}
            if len(units) != 1:
                return None
            values = np.array([v for _, v in found], dtype=np.float64)
            columns[name] = values * 1e-3 if units == {"ms"} else values
            continue
        raw = _FIELD[name].findall(text)
        if len(raw) != n_lines:
            return None
        values = np.array(raw, dtype=np.float64)
        if name == "loss" and not np.isfinite(values).all():
            return None
        columns[name] = values
    return steps, columns


def _special_lines(chunk: list[str], text: str) -> list[int]:
    """Indices of the lines the bulk path must not take (events, prefixes, NaN/skips)."""
    offsets: list[int] = []
    for hint in _HINTS:
        pos = text.find(hint)
        while pos != -1:
            offsets.append(pos)
            pos = text.find(hint, pos + 1)
    offsets.extend(m.start() for m in _PREFIX.finditer("\n" + text))
    offsets.extend(m.start() for m in _NAN.finditer(text))
    if not offsets:
        return []
    starts = np.cumsum([0] + [len(line) for line in chunk[:-1]])
    return sorted({int(i) for i in np.searchsorted(starts, offsets, side="right") - 1})


def _bulk(parser: TextLogParser, run: list[str], first: int, keep: Collection[str]) -> None:
    if not run:
        return
    bulk = None
    if not parser.pending():
        bulk = _chunk_columns("".join(run), len(run), keep)
        last = parser.table.last_step
        if bulk is not None and last is not None and bulk[0][0] <= last:
            bulk = None
    if bulk is None:
        for offset, raw in enumerate(run):
            parser.feed(raw, first + offset)
    else:
        parser.table.extend(bulk[0], bulk[1])
        parser.count_steps(len(bulk[0]))


def parse_fast(lines: Iterable[str], fmt: str, source: str, keep: Collection[str]) -> TrainLog:
    parser = TextLogParser(fmt, source, keep)
    lineno = 1
    it = (line if line.endswith("\n") else line + "\n" for line in lines)
    while True:
        chunk = list(itertools.islice(it, CHUNK))
        if not chunk:
            break
        previous = 0
        for i in _special_lines(chunk, "".join(chunk)):
            _bulk(parser, chunk[previous:i], lineno + previous, keep)
            parser.feed(chunk[i], lineno + i)
            previous = i + 1
        _bulk(parser, chunk[previous:], lineno + previous, keep)
        lineno += len(chunk)
    return parser.finish()
