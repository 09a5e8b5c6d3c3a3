"""The column layout of one nccl-tests table, read from its header, and rows read through it.

Rows are split on whitespace and read from both ends: the trailing tokens are the
two halves (out-of-place, in-place) whose width the header gives; the leading ones
are `size count type [redop] [root]`. Old all-to-all rows leave `redop` blank, so
the leading part may be one token short; a token that does not fit makes the row
unreadable instead of shifting columns. Numbers are read strictly (digits, a point, an
exponent; `N/A` where nccl-tests prints it): a negative, a comma, a stray letter or byte makes
the row unreadable, and `nan`/`inf` raise `NonFinite` so that the caller reports the row
instead of handing the value on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from acceptance.tools.nccl.names import REDOPS, TYPE_SIZES
from acceptance.tools.nccl.records import NcclHalf, NcclRow

#: header name → field of NcclHalf (None: the value goes to `extras` under that key)
_HALF_FIELDS: dict[str, str] = {
    "time": "time_us",
    "cputime": "time_us",
    "algbw": "algbw",
    "busbw": "busbw",
    "#wrong": "wrong",
    "error": "error",
    "#bitdiff": "bitdiff",
    "i_min": "i_min_us",
    "i_max": "i_max_us",
    "i_p99": "i_p99_us",
    "i_cv%": "i_cv_pct",
}
_KEY_NAMES = ("size", "count", "type", "redop", "root")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*$")
_INT = re.compile(r"-?\d+$")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_NON_FINITE = frozenset({"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity"})
#: width of `"%12li  %12li  %8s  %6s  %6s"`, the unified row preamble (2.13+)
UNIFIED_PREAMBLE_WIDTH = 52


#: the half of every layout since 2.13 (time or cputime): read without naming each value
_PLAIN_HALVES = frozenset({("time", "algbw", "busbw", "#wrong"), ("cputime", "algbw", "busbw", "#wrong")})
_NO_EXTRAS: Mapping[str, float | None] = MappingProxyType({})
_ONE_NUMBER = r"(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|N/A)"
#: the eight values of a plain row joined by blanks: unsigned decimals (ASCII digits) or N/A
_EIGHT_NUMBERS = re.compile(rf"(?a:{_ONE_NUMBER}(?: {_ONE_NUMBER}){{7}})")
#: types and ops nccl-tests prints: they pass `_WORD` without being tested each time
_KNOWN = frozenset(TYPE_SIZES) | frozenset(REDOPS) | {"none"}


class NonFinite(ValueError):
    """A data row printed `nan` or `inf` where a measurement belongs."""

    def __init__(self, token: str) -> None:
        self.token = token
        super().__init__(token)


@dataclass(frozen=True)
class Layout:
    """Key columns, the columns of one half, and whether a timestamp closes the row."""

    keys: tuple[str, ...]
    half: tuple[str, ...]
    timestamp: bool
    #: tokens after the key columns
    need: int = field(init=False, compare=False, repr=False)
    #: the key columns of every collective since 2.13: `size count type redop root`
    unified: bool = field(init=False, compare=False, repr=False)
    #: a 2.13+ row without timestamp or extra columns: 13 tokens, read straight through
    _plain: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "need", 2 * len(self.half) + (2 if self.timestamp else 0))
        object.__setattr__(self, "unified", self.keys == _KEY_NAMES)
        object.__setattr__(self, "_plain", self.unified and self.half in _PLAIN_HALVES and not self.timestamp)

    @property
    def old_error_column(self) -> bool:
        return "error" in self.half

    def preamble(self, tokens: list[str]) -> tuple[int, int, str, str | None, int | None] | None:
        """`size count type [redop] [root]` from leading tokens, or None when they do not fit.

        Only the old column sets (before 2.13) may leave `redop` blank (alltoall); 2.13+ print
        every key column, so a missing one there is a damaged row, never a blank.
        """
        if len(tokens) < 3 or len(tokens) > len(self.keys):
            return None
        size, count, kind = tokens[0], tokens[1], tokens[2]
        if not (size.isdigit() and count.isdigit() and size.isascii() and count.isascii() and _WORD.match(kind)):
            return None
        extra = tokens[3:]
        names = self.keys[3:]
        if len(extra) != len(names):
            if self.unified or "redop" not in names or len(extra) != len(names) - 1:
                return None
            names = tuple(n for n in names if n != "redop")  # old alltoall: a blank redop column
        redop: str | None = None
        root: int | None = None
        for name, tok in zip(names, extra, strict=True):
            if name == "root":
                if not _INT.match(tok) or not tok.isascii():
                    return None
                root = int(tok)
            elif name == "redop":
                if not _WORD.match(tok):
                    return None
                redop = tok
        return int(size), int(count), kind, redop, root

    def halves(self, tokens: list[str]) -> tuple[NcclHalf, NcclHalf, str | None] | None:
        """Both halves (and the timestamp) from exactly `need` tokens, or None; NonFinite for nan/inf."""
        if len(tokens) != self.need:
            return None
        k = len(self.half)
        try:
            oop = _half(self.half, tokens[:k])
            ip = _half(self.half, tokens[k : 2 * k])
        except NonFinite:
            raise
        except ValueError:
            return None
        stamp = " ".join(tokens[2 * k :]) if self.timestamp else None
        return oop, ip, stamp

    def row(self, tokens: list[str], line: int) -> NcclRow | None:
        """A whole row from its tokens, or None when the tokens do not fit the layout."""
        if self._plain and len(tokens) == 13:
            return _plain_row(tokens, line)
        lead = len(tokens) - self.need
        if lead < 3:
            return None
        pre = self.preamble(tokens[:lead])
        if pre is None:
            return None
        return self.join(pre, tokens[lead:], line)

    def join(self, pre: tuple[int, int, str, str | None, int | None], tokens: list[str], line: int) -> NcclRow | None:
        body = self.halves(tokens)
        if body is None:
            return None
        size, count, kind, redop, root = pre
        return NcclRow(size, count, kind, redop, root, body[0], body[1], body[2], line)


def _plain_row(tokens: list[str], line: int) -> NcclRow | None:
    """`size count type redop root` then two halves of `time algbw busbw #wrong` (what `preamble`,
    `halves` and `join` read for this layout, without their generality: most rows are these)."""
    size, count, kind, redop, root = tokens[0], tokens[1], tokens[2], tokens[3], tokens[4]
    if not (size.isdigit() and count.isdigit() and size.isascii() and count.isascii()):
        return None
    if not ((kind in _KNOWN or _word(kind)) and (redop in _KNOWN or _word(redop))):
        return None
    if not (root.isascii() and (root[1:] if root[:1] == "-" else root).isdigit()):
        return None
    numbers = tokens[5:13]
    try:
        if _EIGHT_NUMBERS.fullmatch(" ".join(numbers)):  # one regex for the eight values of a plain row
            values = [None if t == "N/A" else float(t) for t in numbers]
        else:
            values = [_value(t) for t in numbers]  # NonFinite, or ValueError naming the odd one
    except NonFinite:
        raise
    except ValueError:
        return None
    oop = _half_of(values[0], values[1], values[2], values[3])
    ip = _half_of(values[4], values[5], values[6], values[7])
    return _row_of(int(size), int(count), kind, redop, int(root), oop, ip, line)


_new = object.__new__


def _half_of(time_us: float | None, algbw: float | None, busbw: float | None, wrong: float | None) -> NcclHalf:
    """`NcclHalf(time_us, algbw, busbw, wrong, _NO_EXTRAS)` built without the frozen dataclass's
    per-field `object.__setattr__` (its `__init__` does nothing else); a third of a row's cost."""
    half: NcclHalf = _new(NcclHalf)
    fields = half.__dict__
    fields["time_us"], fields["algbw"], fields["busbw"], fields["wrong"] = time_us, algbw, busbw, wrong
    fields["extras"] = _NO_EXTRAS
    return half


def _row_of(size: int, count: int, kind: str, redop: str, root: int, oop: NcclHalf, ip: NcclHalf, line: int) -> NcclRow:
    """`NcclRow(size, count, kind, redop, root, oop, ip, None, line)`, the same way as `_half_of`."""
    row: NcclRow = _new(NcclRow)
    fields = row.__dict__
    fields["size"], fields["count"], fields["type"], fields["redop"], fields["root"] = size, count, kind, redop, root
    fields["oop"], fields["ip"], fields["timestamp"], fields["line"] = oop, ip, None, line
    return row


def _word(token: str) -> bool:
    """`_WORD` without the regex: an ASCII letter, then ASCII letters, digits and underscores."""
    return token.isascii() and token[:1].isalpha() and token.replace("_", "a").isalnum()


def _value(token: str) -> float | None:
    if token == "N/A":
        return None
    first = token[0]
    # float() of an ASCII token that starts with a digit or a point and has no '_' reads exactly
    # the unsigned decimal and exponent forms nccl-tests prints (what _NUMBER spells out)
    if ("0" <= first <= "9" or first == ".") and token.isascii() and "_" not in token:
        return float(token)
    if token.lower() in _NON_FINITE:
        raise NonFinite(token)
    raise ValueError(token)


def _half(names: tuple[str, ...], tokens: list[str]) -> NcclHalf:
    if names in _PLAIN_HALVES:
        return NcclHalf(_value(tokens[0]), _value(tokens[1]), _value(tokens[2]), _value(tokens[3]), _NO_EXTRAS)
    values: dict[str, float | None] = {}
    for name, token in zip(names, tokens, strict=True):
        values[_HALF_FIELDS[name]] = _value(token)
    extras = {k: v for k, v in values.items() if k not in ("time_us", "algbw", "busbw", "wrong")}
    return NcclHalf(values.get("time_us"), values.get("algbw"), values.get("busbw"), values.get("wrong"), extras)


def layout_from_header(names: list[str]) -> Layout | None:
    """The layout of a `#  size count type … time algbw busbw #wrong …` line, or None."""
    if len(names) < 3 or names[:3] != ["size", "count", "type"]:
        return None
    timestamp = names[-1] == "timestamp"
    if timestamp:
        names = names[:-1]
    first = next((i for i, n in enumerate(names) if n in ("time", "cputime")), None)
    if first is None:
        return None
    keys = tuple(names[:first])
    if any(k not in _KEY_NAMES for k in keys):
        return None
    rest = names[first:]
    if len(rest) % 2:
        return None
    half = tuple(rest[: len(rest) // 2])
    if tuple(rest[len(rest) // 2 :]) != half or any(n not in _HALF_FIELDS for n in half):
        return None
    return Layout(keys, half, timestamp)
