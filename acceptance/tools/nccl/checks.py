"""Checks of a whole nccl-tests table: where `N/A` may stand, and whether the sizes are the sweep.

`N/A` is what nccl-tests prints where it has no value for a reason: in the `#wrong` (or old
`error`) column when validation is off (`-c 0`), and in the in-place `#wrong` of alltoall and
sendrecv, whose in-place result is never checked. It never prints `N/A` for a time, an algbw or a
busbw: there, and in a `#wrong` the data check should have filled, the row is damaged.

The table's sizes are the sweep of the report's own header (`minBytes`, `maxBytes` or the
`Reducing maxBytes` it announced, `step: S(factor|bytes)`), one row per size: from `minBytes`,
times the factor (or plus the step) while at most `maxBytes`. nccl-tests prints the bytes of the
buffer it really used, which it rounds down: to whole elements, and for the collectives that split
the buffer over the ranks (all_gather, reduce_scatter, alltoall) to a chunk per rank of 16 bytes or
4 elements, so small sizes print `0` and can repeat. A printed size is that size's row only if it
is at most the requested size and less than one rounding unit below it. With `-d all`/`-o all`
the sweep restarts for each type and op (a new row key), with `-N` it repeats whole. A row
missing, repeated, or with a changed size leaves a size that does not follow the sweep.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from acceptance.tools.nccl.names import TYPE_SIZES
from acceptance.tools.nccl.records import NcclRow

#: collectives whose printed size is the whole buffer of every rank (rounded to whole elements only)
WHOLE_BUFFER = frozenset({"all_reduce", "broadcast", "reduce", "sendrecv"})
#: collectives whose in-place result nccl-tests never checks (their in-place `#wrong` is always N/A)
UNCHECKED_IN_PLACE = frozenset({"alltoall", "sendrecv"})
#: sweeps longer than this are not spelled out (nccl-tests itself would take days to print them)
_MAX_SWEEP = 1 << 16


class Entry(NamedTuple):
    """What the checks read of one row: its line, size and key, and which `#wrong` halves print N/A."""

    line: int
    size: int
    type: str
    redop: str | None
    root: int | None
    oop_wrong_na: bool
    ip_wrong_na: bool


def missing_measurement(row: NcclRow) -> str | None:
    """The first time, algbw or busbw a row prints as N/A (`the out-of-place busbw`), or None."""
    for place, half in (("out-of-place", row.oop), ("in-place", row.ip)):
        if half is None:
            continue
        for name, value in (("time", half.time_us), ("algbw", half.algbw), ("busbw", half.busbw)):
            if value is None:
                return f"the {place} {name}"
    return None


def wrong_na_problem(entry: Entry, validation: int | None, collective: str | None) -> str | None:
    """Why a row's `#wrong` N/A has no reason to be there, or None."""
    if validation is None or validation == 0:
        return None
    if entry.oop_wrong_na:
        return "#wrong is N/A out-of-place although validation is on: the data check's count belongs there"
    if entry.ip_wrong_na and collective is not None and collective not in UNCHECKED_IN_PLACE:
        return (
            f"#wrong is N/A in-place although validation is on and {collective} checks its in-place result: "
            "the data check's count belongs there"
        )
    return None


def sweep(params: Mapping[str, Any]) -> list[int] | None:
    """The sizes the header's sweep asks for, or None when the header does not say (or the sweep is endless)."""
    low, high = params.get("min_bytes"), params.get("max_bytes")
    factor, step = params.get("step_factor"), params.get("step_bytes")
    if type(low) is not int or type(high) is not int or (type(factor) is not int and type(step) is not int):
        return None
    effective = params.get("max_bytes_effective")
    top = min(high, effective) if type(effective) is int else high
    sizes: list[int] = []
    size = low
    while size <= top:
        if len(sizes) >= _MAX_SWEEP:
            return None
        sizes.append(size)
        nxt = size * factor if type(factor) is int and factor > 1 else size + (step if type(step) is int else 0)
        if nxt <= size:
            break
        size = nxt
    return sizes


def said(params: Mapping[str, Any]) -> str:
    """The sweep in the header's own words: `minBytes 8 maxBytes 1073741824 step: 2(factor)`."""
    factor, step = params.get("step_factor"), params.get("step_bytes")
    text = f"minBytes {params.get('min_bytes')} maxBytes {params.get('max_bytes')} step: " + (
        f"{factor}(factor)" if factor is not None else f"{step}(bytes)"
    )
    effective = params.get("max_bytes_effective")
    return text + (f", reduced to maxBytes {effective}" if effective is not None else "")


def command_mismatch(params: Mapping[str, Any], asked: Sequence[int]) -> str | None:
    """Why a report's header sweep is not the sweep its command asked for (`NcclTest.sizes()`), or None.

    A header that announced a smaller maxBytes (`Reducing maxBytes … due to memory limitation`)
    asks for a prefix of the command's sweep; anything else means the output is not that command's.
    """
    printed = sweep({k: v for k, v in params.items() if k != "max_bytes_effective"})
    if printed is None or not asked or len(asked) >= 4096 or list(asked) == printed:  # 4096: `sizes()` stops there
        return None
    return (
        f"the report's header asks for sizes {printed[0]} to {printed[-1]} ({len(printed)} sizes: {said(params)}) "
        f"but the command asked for {asked[0]} to {asked[-1]} ({len(asked)} sizes): not this command's output"
    )


def _unit(entry: Entry, collective: str | None, nranks: int | None) -> int | None:
    """How far below the requested size the printed one may be rounded (None: no bound known)."""
    element = TYPE_SIZES.get(entry.type, 8)
    if collective in WHOLE_BUFFER:
        return element
    if nranks is None:
        return None
    return nranks * max(16, 4 * element) + element


class Sweep(NamedTuple):
    """The sizes a header's sweep asks for, as numbers and as nccl-tests prints them (`%li`)."""

    sizes: list[int]
    texts: tuple[str, ...]


def sweep_key(params: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a header's sweep depends on: reports with the same key have the same `Sweep`."""
    return tuple(map(params.get, ("min_bytes", "max_bytes", "max_bytes_effective", "step_factor", "step_bytes")))


def sweep_of(params: Mapping[str, Any]) -> Sweep | None:
    sizes = sweep(params)
    return None if sizes is None else Sweep(sizes, tuple(map(str, sizes)))


def text_table_clean(
    lines: Sequence[str],
    params: Mapping[str, Any],
    collective: str | None,
    nranks: int | None,
    expected: Sweep | None,
) -> bool:
    """Whether a table's clean text rows (lines that match `PLAIN_ROW_LINE`) pass every check here, cheaply.

    True only when nothing is to be said: each `#wrong` N/A has its reason, every row has one key and
    the sizes are the sweep `expected` (`sweep_of(params)`; without one, they rise). False sends the
    caller to the row by row checks, which name what is wrong. In such a line only a `#wrong` can be
    N/A; one N/A, at the end, is the in-place one.
    """
    if not lines:
        return True
    if params.get("validation") and "N/A" in "".join(lines):
        unchecked = collective in UNCHECKED_IN_PLACE or collective is None
        if not (unchecked and all(line.count("N/A") == 1 and line.rstrip().endswith("N/A") for line in lines)):
            return False
    heads = [line.split(None, 5) for line in lines]
    _, _, kind, redop, root, _ = heads[0]
    if not all(h[2] == kind and h[3] == redop and h[4] == root for h in heads):
        return False
    texts = tuple([h[0] for h in heads])
    if expected is None:
        return all(a < b or a == b == 0 for a, b in itertools.pairwise(map(int, texts)))
    if texts == expected.texts:  # most tables: every size printed as asked
        return True
    if not expected.sizes or len(texts) % len(expected.sizes):
        return False
    unit = _unit(Entry(0, 0, kind, None, None, False, False), collective, nranks)
    wanted = expected.sizes * (len(texts) // len(expected.sizes))
    if unit is None:
        return all(p <= s for p, s in zip(map(int, texts), wanted, strict=True))
    return all(s - unit < p <= s for p, s in zip(map(int, texts), wanted, strict=True))


def sweep_problems(
    entries: Sequence[Entry], params: Mapping[str, Any], collective: str | None, nranks: int | None
) -> list[tuple[int, str]]:
    """(line, what is wrong) for each run of rows whose sizes do not follow the header's sweep."""
    found = sweep(params)
    if found is None or not entries:
        return _unordered(entries)
    expected, words = found, said(params)
    if not expected:
        return [(entries[0].line, f"a data row although the sweep ({words}) has no size")]
    problems: list[tuple[int, str]] = []
    j = 0
    key: tuple[str, str | None, int | None] | None = None
    broken = False
    previous: Entry | None = None
    for entry in entries:
        here = (entry.type, entry.redop, entry.root)
        if here != key:
            if previous is not None and not broken and 0 < j < len(expected):
                problems.append(_short(previous, expected, j, words))
            key, j, broken = here, 0, False
        elif j == len(expected):
            j = 0  # the sweep again (`-N` cycles)
        previous = entry
        if broken:
            continue
        wanted = expected[j]
        unit = _unit(entry, collective, nranks)
        if entry.size > wanted or (unit is not None and wanted - entry.size >= unit):
            problems.append(
                (
                    entry.line,
                    f"size {entry.size} where the sweep ({words}) has size {wanted}"
                    + (f" (printed as {max(0, wanted - unit + 1)} to {wanted} bytes)" if unit and unit > 1 else "")
                    + ": a row missing, repeated or changed",
                )
            )
            broken = True
            continue
        j += 1
    if previous is not None and not broken and 0 < j < len(expected):
        problems.append(_short(previous, expected, j, words))
    return problems


def _short(last: Entry, expected: list[int], j: int, words: str) -> tuple[int, str]:
    more = len(expected) - j
    return (
        last.line,
        f"the table ends at size {last.size} but the sweep ({words}) has {more} more size{'s' if more != 1 else ''} "
        f"(next {expected[j]}, last {expected[-1]}): a row missing",
    )


def _unordered(entries: Sequence[Entry]) -> list[tuple[int, str]]:
    """Without a sweep to follow: within one row key, sizes never fall and a non-zero size never repeats."""
    problems: list[tuple[int, str]] = []
    previous: Entry | None = None
    for entry in entries:
        same_key = previous is not None and entry[2:5] == previous[2:5]
        if same_key and previous is not None and (entry.size < previous.size or entry.size == previous.size != 0):
            problems.append(
                (entry.line, f"size {entry.size} after size {previous.size}: a row repeated or out of order")
            )
        previous = entry
    return problems
