"""Templates of Megatron iteration lines for the bulk path (`trainlog.fast`).

A template is a line *skeleton* (the line with every ASCII digit as '0') that the line
parser reads as exactly one plain record. Every regex of the line parser treats all ASCII
digits alike and `float`/`int` accept a string by the places of its digits only, so any line
with the same skeleton gives a record with the same fields, found at the same offsets.
`matches` checks lines against a skeleton with two numpy passes; `values` computes the fields
from the digit bytes: exact, since a mantissa below 2**53 times or over a power of ten up to
1e22 is one correctly rounded IEEE operation (Clinger's fast path), and Python's `float` reads
the rare value outside it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from acceptance.tools.trainlog.patterns import FIELDS, KV, MEGATRON, PREFIX
from acceptance.tools.trainlog.text import TextLogParser

_SHAPE = re.compile(r"([+-]?)(0*)(?:\.(0*))?(?:[eE]([+-]?)(0+))?")
_CHECKS = ("loss", "skipped", "nan")  # read even when not kept: they decide NaN/skip events
_POW10 = 10.0 ** np.arange(23)
_ZEROS = bytes.maketrans(b"0123456789", b"0000000000")
UNTRIED, LINE = -1, -2  # Chunk.template for a line not yet tried, or left to the line parser
_EXACT = 2**53


@dataclass(frozen=True)
class Value:
    """Where one numeric field's digits lie in the line, and how to read them."""

    name: str
    factor: float
    start: int
    end: int
    mantissa: np.ndarray  # offsets of the mantissa digits, most significant first
    fraction: int  # how many of them follow the decimal point
    negative: bool
    exponent: np.ndarray  # offsets of the exponent digits
    exponent_negative: bool


@dataclass(frozen=True)
class Template:
    length: int
    width: int  # the length rounded up to whole 8-byte words
    low: np.ndarray  # per byte: the skeleton's byte, b"0" at digits
    span: np.ndarray  # per byte: 0 at literal bytes, 9 at digits (byte - low must not exceed it)
    step: np.ndarray  # offsets of the step's digits
    values: tuple[Value, ...]
    kept: tuple[str, ...]  # kept fields in the record's order (what the dedupe window holds)
    groups: tuple[np.ndarray, ...]  # digit groups: the step, then each value's mantissa and exponent
    digits: np.ndarray  # all their offsets, group after group
    bounds: np.ndarray  # where each group starts among `digits`
    weights: np.ndarray | None  # each digit's power of ten; None when a group has over 15 digits


def _value(name: str, factor: float, skeleton: str, start: int, end: int) -> Value | None:
    m = _SHAPE.fullmatch(skeleton, start, end)
    if m is None:
        return None
    sign, whole, frac, exp_sign, exp = m.groups()
    frac = frac or ""
    digits = len(whole) + len(frac)
    if digits == 0 or digits > 18 or (exp is not None and len(exp) > 4):
        return None
    first = start + len(sign)
    mantissa = list(range(first, first + len(whole)))
    mantissa += list(range(first + len(whole) + 1, first + len(whole) + 1 + len(frac)))
    exponent = list(range(m.start(5), m.end(5))) if exp is not None else []
    return Value(
        name,
        factor,
        start,
        end,
        np.array(mantissa, dtype=np.intp),
        len(frac),
        sign == "-",
        np.array(exponent, dtype=np.intp),
        exp_sign == "-",
    )


def build_template(skeleton: str, fmt: str, keep: Collection[str]) -> Template | None:
    """The template of a skeleton line (ASCII, ending in a newline); None unless the line
    parser reads it as one plain record with no event, timer, rank, cut or second record."""
    if "\x1b" in skeleton or PREFIX.match(skeleton) or not skeleton.endswith("\n"):
        return None
    scratch = TextLogParser(fmt, "<template>", None)
    scratch.feed(skeleton, 1)
    if scratch.pending() or len(scratch.table) != 1 or scratch.events or scratch.timers or scratch.notes:
        return None
    if "rank" in set(scratch.table.iter_names()):
        return None
    line = skeleton.rstrip("\r\n")
    starts = list(MEGATRON.finditer(line))
    if len(starts) != 1 or len(starts[0].group(1)) > 18:
        return None
    found: dict[str, tuple[float, int, int]] = {}
    for kv in KV.finditer(line, starts[0].end()):
        spec = FIELDS.get(kv.group(1).lower())
        if spec is None:
            continue
        try:
            float(kv.group(2))
        except ValueError:
            continue
        found[spec[0]] = (spec[1], kv.start(2), kv.end(2))
    found.pop("step", None)
    values: list[Value] = []
    for name, (factor, start, end) in found.items():
        if name in keep or name in _CHECKS:
            value = _value(name, factor, skeleton, start, end)
            if value is None:
                return None
            values.append(value)
    data = np.frombuffer(skeleton.encode("ascii"), dtype=np.uint8)
    width = -(-len(data) // 8) * 8
    low = np.zeros(width, dtype=np.uint8)
    low[: len(data)] = data
    span = np.full(width, 255, dtype=np.uint8)  # bytes past the line's end: anything
    span[: len(data)] = np.where(data == ord("0"), 9, 0)
    step = np.arange(*starts[0].span(1), dtype=np.intp)
    groups = [step]
    for value in values:
        groups += [value.mantissa] + ([value.exponent] if len(value.exponent) else [])
    weights: np.ndarray | None = None
    if max(len(g) for g in groups) <= 15:
        weights = np.concatenate([10.0 ** np.arange(len(g) - 1, -1, -1) for g in groups])
    return Template(
        length=len(data),
        width=width,
        low=low,
        span=span,
        step=step,
        values=tuple(values),
        kept=tuple(name for name in found if name in keep),
        groups=tuple(groups),
        digits=np.concatenate(groups),
        bounds=np.cumsum([0] + [len(g) for g in groups[:-1]]),
        weights=weights,
    )


def matches(lines: np.ndarray, template: Template, scratch: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """Which lines (rows of `template.length` or `template.width` bytes) have the template's
    skeleton; `scratch` and `flags` are buffers at least as large as `lines` (no fresh pages)."""
    width = lines.shape[1]
    diff = np.subtract(lines, template.low[:width], out=scratch[: lines.size].reshape(lines.shape))
    bad = np.greater(diff, template.span[:width], out=flags[: lines.size].reshape(lines.shape))
    ok: np.ndarray = ~(bad.view(np.uint64) if width % 8 == 0 else bad).any(axis=1)
    return ok


def _numbers(digits: np.ndarray, template: Template) -> list[np.ndarray]:
    """The integers spelt by each digit group of the template (step, then each value's
    mantissa and exponent), from the lines' digit bytes (`template.digits` columns): a few
    passes when each group fits in 15 digits (sums of digits times powers of ten are then
    exact in float64), else int64 per group."""
    if template.weights is not None:
        work = digits.astype(np.float64)
        work -= 48.0
        work *= template.weights
        sums = np.add.reduceat(work, template.bounds, axis=1)
        return [sums[:, i] for i in range(sums.shape[1])]
    out = []
    for first, group in zip(template.bounds.tolist(), template.groups, strict=True):
        weights = 10 ** np.arange(len(group) - 1, -1, -1, dtype=np.int64)
        out.append((digits[:, first : first + len(group)].astype(np.int64) - 48) @ weights)
    return out


def values(
    digits: np.ndarray, buf: np.ndarray, starts: np.ndarray, template: Template
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Steps and field values of lines known to match the template, from their digit bytes
    (`buf` and the lines' `starts` serve the rare value that `float` must read)."""
    numbers = iter(_numbers(digits, template))
    steps = next(numbers).astype(np.int64)
    out: dict[str, np.ndarray] = {}
    for v in template.values:
        mantissa = next(numbers)
        if not len(v.exponent) and template.weights is not None:
            value = mantissa / _POW10[v.fraction] if v.fraction else mantissa.astype(np.float64)
        else:
            power = np.full(len(digits), -v.fraction, dtype=np.int64)
            if len(v.exponent):
                exp = next(numbers).astype(np.int64)
                power += -exp if v.exponent_negative else exp
            exact = (mantissa <= _EXACT) & (np.abs(power) <= 22)
            scale = _POW10[np.abs(np.clip(power, -22, 22))]
            m = mantissa.astype(np.float64)
            value = np.where(power >= 0, m * scale, m / scale)
            for i in np.flatnonzero(~exact).tolist():
                start = int(starts[i])
                value[i] = float(buf[start + v.start : start + v.end].tobytes())
                if v.negative:
                    value[i] = -value[i]  # negated again below
        if v.negative:
            value = -value
        out[v.name] = value * v.factor if v.factor != 1.0 else value
    return steps, out


class Chunk:
    """One chunk's lines as bytes, which of them the bulk path takes, and their values."""

    def __init__(self, lines: list[str] | None, data: bytes, starts: np.ndarray, lengths: np.ndarray) -> None:
        n = len(starts)
        self.lines = lines  # None: the lines are only in `data` (ASCII)
        self.data = data
        self.buf = np.frombuffer(data, dtype=np.uint8)
        self.starts = starts
        self.lengths = lengths
        self.steps = np.zeros(n, dtype=np.int64)
        self.columns: dict[str, np.ndarray] = {}
        self.orders: list[tuple[str, ...]] = []  # kept fields in the record's order, per template id
        self.template = np.full(n, UNTRIED, dtype=np.int32)  # template id, or UNTRIED / LINE

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, row: int) -> str:
        if self.lines is not None:
            return self.lines[row]
        start = int(self.starts[row])
        return self.data[start : start + int(self.lengths[row])].decode("ascii")

    def skeleton(self, row: int) -> bytes:
        start = int(self.starts[row])
        return self.buf[start : start + int(self.lengths[row])].tobytes().translate(_ZEROS)

    def take(self, rows: np.ndarray, digits: np.ndarray, template: Template) -> None:
        steps, cols = values(digits, self.buf, self.starts[rows], template)
        ok = np.ones(len(rows), dtype=bool)
        for name in ("skipped", "nan"):
            if name in cols:
                ok &= cols[name] == 0  # skip and NaN events: the line parser makes them
        if "loss" in cols:
            ok &= np.isfinite(cols["loss"])
        self.orders.append(template.kept)
        self.template[rows] = np.where(ok, len(self.orders) - 1, LINE)
        rows = rows[ok]
        self.steps[rows] = steps[ok]
        for name in template.kept:
            col = self.columns.get(name)
            if col is None:
                col = self.columns[name] = np.full(len(self), np.nan)
            col[rows] = cols[name][ok]
