"""Fast path for long Megatron logs when the caller keeps only a few columns.

Lines are taken in chunks. Lines that need the line parser (events, rank prefixes, timers,
colours) are found with plain substring searches and fed to it one by one; each run of plain
iteration records between them is matched with one regex built from the run's own field
layout (kept values captured, other fields matched by key) and appended in bulk. A run that
does not fit exactly (a different layout, steps not increasing, NaN or skipped iterations)
goes through the line parser, so results are identical to the slow path.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Iterable

import numpy as np

from acceptance.tools.trainlog_model import TrainLog
from acceptance.tools.trainlog_patterns import FIELDS
from acceptance.tools.trainlog_text import TextLogParser

_STEP = re.compile(r"iteration\s+\d+/\s*\d+\s*\|")
_COUNTS = ("number of skipped iterations", "number of nan iterations")
# Anything that needs the line parser: events, timers, colours, rank prefixes, quoting.
_HINTS = ("heckpoint", "Training starts", "Resuming", "validation loss", "/Rnk:", "\x1b")
_PREFIX = re.compile(r"\n[ \t]*(?:>|\[[A-Za-z_]*\d+\]:|\[[Rr]ank|\d+:\s)")
FAST_COLUMNS = frozenset(
    {"step", "step_time_s", "loss", "lr", "consumed_samples", "global_batch_size", "grad_norm", "loss_scale"}
)
CHUNK = 20_000


def usable(fmt: str, keep: Collection[str] | None) -> bool:
    return fmt in ("megatron-lm", "megatron-deepspeed") and keep is not None and set(keep) <= FAST_COLUMNS


Template = tuple[re.Pattern[str], tuple[tuple[str, float], ...]]


def _template(line: str, keep: Collection[str]) -> Template | None:
    """One regex for a whole record of this layout: the kept values (and the skipped/NaN
    counts) captured, every other field matched literally by its key."""
    m = _STEP.search(line)
    if m is None:
        return None
    pattern = [r"iteration\s+(\d+)/\s*\d+\s*\|"]
    groups: list[tuple[str, float]] = [("step", 1.0)]
    for part in line[m.end() :].split("|"):
        key, sep, _ = part.partition(":")
        if not sep:
            if part.strip():
                return None
            continue
        key = key.strip()
        spec = FIELDS.get(key.lower())
        captured = (key, 1.0) if key in _COUNTS else spec if spec is not None and spec[0] in keep else None
        if captured is not None:
            pattern.append(r"\s*" + re.escape(key) + r":\s*([^\s|]+)\s*\|")
            groups.append(captured)
        else:
            pattern.append(r"\s*" + re.escape(key) + r":[^|]*\|")
    return re.compile("".join(pattern)), tuple(groups)


def _chunk_columns(
    run: list[str], text: str, keep: Collection[str], templates: dict[str, Template | None]
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    if any(hint in text for hint in _HINTS) or _PREFIX.search("\n" + text):
        return None
    first = run[0]
    layout = "|".join(part.partition(":")[0] for part in first.split("|")[1:])
    if layout not in templates:
        templates[layout] = _template(first, keep)
    template = templates[layout]
    if template is None:
        return None
    regex, groups = template
    found = regex.findall(text)
    if len(found) != len(run):
        return None
    try:
        table = np.array(found, dtype=np.float64).reshape(len(run), len(groups))
    except ValueError:
        return None
    steps = table[:, 0].astype(np.int64)
    if len(steps) > 1 and not (np.diff(steps) > 0).all():
        return None
    columns: dict[str, np.ndarray] = {}
    for i, (name, factor) in enumerate(groups[1:], start=1):
        values = table[:, i]
        if name in _COUNTS:
            if values.any():
                return None  # skipped or NaN iterations: events, the line parser makes them
            continue
        if name == "loss" and not np.isfinite(values).all():
            return None
        columns[name] = values * factor if factor != 1.0 else values
    if not set(keep) - {"step"} <= set(columns):
        return None
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
    if not offsets:
        return []
    starts = np.cumsum([0] + [len(line) for line in chunk[:-1]])
    return sorted({int(i) for i in np.searchsorted(starts, offsets, side="right") - 1})


def _bulk(
    parser: TextLogParser,
    run: list[str],
    first: int,
    keep: Collection[str],
    templates: dict[str, Template | None],
) -> None:
    if not run:
        return
    bulk = None
    if not parser.pending():
        bulk = _chunk_columns(run, "".join(run), keep, templates)
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
    templates: dict[str, Template | None] = {}
    lineno = 1
    it = (line if line.endswith("\n") else line + "\n" for line in lines)
    while True:
        chunk = list(itertools.islice(it, CHUNK))
        if not chunk:
            break
        previous = 0
        for i in _special_lines(chunk, "".join(chunk)):
            _bulk(parser, chunk[previous:i], lineno + previous, keep, templates)
            parser.feed(chunk[i], lineno + i)
            previous = i + 1
        _bulk(parser, chunk[previous:], lineno + previous, keep, templates)
        lineno += len(chunk)
    return parser.finish()
