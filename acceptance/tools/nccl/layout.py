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

import math
import re
from collections.abc import Iterable, Mapping
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
    #: a 2.13+ row without timestamp or extra columns: 13 tokens, read straight through (`plain_row`)
    plain: bool = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "need", 2 * len(self.half) + (2 if self.timestamp else 0))
        object.__setattr__(self, "unified", self.keys == _KEY_NAMES)
        object.__setattr__(self, "plain", self.unified and self.half in _PLAIN_HALVES and not self.timestamp)

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
        if self.plain and len(tokens) == 13:
            return plain_row(tokens, line)
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


def plain_row(tokens: list[str], line: int) -> NcclRow | None:
    """`size count type redop root` then two halves of `time algbw busbw #wrong` (what `preamble`,
    `halves` and `join` read for this layout, without their generality: most rows are these)."""
    size, count, kind, redop, root = tokens[:5]
    if not (size.isdigit() and count.isdigit() and size.isascii() and count.isascii()):
        return None
    if not ((kind in _KNOWN or _word(kind)) and (redop in _KNOWN or _word(redop))):
        return None
    if not (root.isascii() and (root[1:] if root[:1] == "-" else root).isdigit()):
        return None
    try:
        t1, a1, b1, w1, t2, a2, b2, w2 = [_value(t) for t in tokens[5:13]]  # NonFinite passes through
    except NonFinite:
        raise
    except ValueError:
        return None
    return _row_of(
        int(size), int(count), kind, redop, int(root), _half_of(t1, a1, b1, w1), _half_of(t2, a2, b2, w2), line
    )


#: a number `_value` reads that cannot overflow to inf (at most 30 digits before the point, an exponent of at
#: most two digits): a longer one takes the checked path
_BOUNDED_NUMBER = r"(?:(?:\d{1,30}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d\d?)?)"
#: time, algbw and busbw are always numbers (an N/A there is a damaged row, read on the checked path)
_CLEAN_HALF = rf" +{_BOUNDED_NUMBER} +{_BOUNDED_NUMBER} +{_BOUNDED_NUMBER} +(?:0|N/A)"
#: a whole line (with its line end) that `plain_row` reads, clean: `size count type redop root` and two
#: halves of `time algbw busbw #wrong` with `#wrong` 0 or N/A (nothing else N/A), blanks between them; the feed
#: loop's test for rows it can keep as text and read later in one batch (`plain_rows`, `plain_rows_json`). Anything
#: else (tabs, signs, letters, nan, a missing column, a non-zero `#wrong`) takes `plain_row`'s path.
PLAIN_ROW_LINE = re.compile(
    rf"(?a: *\d+ +\d+ +[A-Za-z]\w* +[A-Za-z]\w* +-?\d+{_CLEAN_HALF}{_CLEAN_HALF} *)(?:\r\n|\r|\n)"
).fullmatch


def _columns(lines: list[str]) -> list[list[str]]:
    """The 13 columns of lines that match `PLAIN_ROW_LINE` (13 tokens each): all split at once, then sliced."""
    tokens = " ".join(lines).split()
    return [tokens[c::13] for c in range(13)]


def plain_rows(lines: list[str], numbers: list[int]) -> list[NcclRow]:
    """`plain_row` of each line, for lines that match `PLAIN_ROW_LINE`: read a column at a time.

    Every line holds exactly 13 tokens, so the tokens of all of them split at once fall into
    columns by position; what `plain_row` checks token by token the pattern has checked already.
    """
    sizes, counts, kinds, redops, roots, *figures = _columns(lines)
    t1, a1, b1, w1, t2, a2, b2, w2 = (
        [None if t == "N/A" else float(t) for t in texts] if "N/A" in texts else map(float, texts) for texts in figures
    )
    return [
        _row_of(size, count, kind, redop, root, _half_of(*oop), _half_of(*ip), line)
        for size, count, kind, redop, root, oop, ip, line in zip(
            map(int, sizes),
            map(int, counts),
            kinds,
            redops,
            map(int, roots),
            zip(t1, a1, b1, w1, strict=True),
            zip(t2, a2, b2, w2, strict=True),
            numbers,
            strict=True,
        )
    ]


def _json_floats(texts: list[str]) -> Iterable[str]:
    """The JSON `json.dumps` writes for each number token's float (null for N/A)."""
    if "N/A" in texts:
        return ["null" if t == "N/A" else repr(float(t)) for t in texts]
    return map(repr, map(float, texts))


_ROW_JSON = (
    '{"size": %s, "count": %s, "type": "%s", "redop": "%s", "root": %s, '
    '"oop": {"time_us": %s, "algbw": %s, "busbw": %s, "wrong": %s}, '
    '"ip": {"time_us": %s, "algbw": %s, "busbw": %s, "wrong": %s}}'
)


def plain_rows_json(lines: list[str]) -> list[str]:
    """`json.dumps(row.to_json())` of each row of `plain_rows(lines, …)`, written from the tokens.

    The type and op are ASCII words (nothing to escape); every number is written as the float
    or int it reads as, which is what the records would hold.
    """
    sizes, counts, kinds, redops, roots, *figures = _columns(lines)
    size, count, root = (map(repr, map(int, column)) for column in (sizes, counts, roots))
    floats = [_json_floats(column) for column in figures]
    return [_ROW_JSON % values for values in zip(size, count, kinds, redops, root, *floats, strict=True)]


_new = object.__new__
#: the slots' own setters: a frozen record filled without its `__init__`, whose `object.__setattr__`
#: per field is most of a row's cost (`__init__` does nothing else: no defaults are left to compute)
_SET_TIME, _SET_ALGBW, _SET_BUSBW, _SET_WRONG, _SET_EXTRAS = (
    getattr(NcclHalf, name).__set__ for name in ("time_us", "algbw", "busbw", "wrong", "extras")
)
_SET_SIZE, _SET_COUNT, _SET_TYPE, _SET_REDOP, _SET_ROOT, _SET_OOP, _SET_IP, _SET_STAMP, _SET_LINE = (
    getattr(NcclRow, name).__set__
    for name in ("size", "count", "type", "redop", "root", "oop", "ip", "timestamp", "line")
)


def _half_of(time_us: float | None, algbw: float | None, busbw: float | None, wrong: float | None) -> NcclHalf:
    """`NcclHalf(time_us, algbw, busbw, wrong, _NO_EXTRAS)`, filled through its slots."""
    half: NcclHalf = _new(NcclHalf)
    _SET_TIME(half, time_us)
    _SET_ALGBW(half, algbw)
    _SET_BUSBW(half, busbw)
    _SET_WRONG(half, wrong)
    _SET_EXTRAS(half, _NO_EXTRAS)
    return half


def _row_of(size: int, count: int, kind: str, redop: str, root: int, oop: NcclHalf, ip: NcclHalf, line: int) -> NcclRow:
    """`NcclRow(size, count, kind, redop, root, oop, ip, None, line)`, the same way as `_half_of`."""
    row: NcclRow = _new(NcclRow)
    _SET_SIZE(row, size)
    _SET_COUNT(row, count)
    _SET_TYPE(row, kind)
    _SET_REDOP(row, redop)
    _SET_ROOT(row, root)
    _SET_OOP(row, oop)
    _SET_IP(row, ip)
    _SET_STAMP(row, None)
    _SET_LINE(row, line)
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
        value = float(token)
        if not math.isfinite(value):
            raise NonFinite(token)  # a number too long for a float (`1e400`) read as inf
        return value
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
