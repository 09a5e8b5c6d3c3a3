"""Which collective printed a table, when the output does not say (before nccl-tests 2.16.7).

Evidence, strongest first: the old per-collective column sets, the redop/root
values, the in-place `#wrong` that alltoall/sendrecv always print as N/A, the
size/count ratio (1 for whole-buffer collectives, nranks for gathered/scattered
ones), and last the busbw/algbw factor (2(n−1)/n, (n−1)/n, 1). The factor only
breaks ties: some old builds printed other factors. `collective_candidates` gives what the evidence
leaves; one candidate names the collective. A collective named only by a command line before the
report (`+ mpirun … all_reduce_perf`) is taken when the table allows it: that line may belong to
another report.
"""

from __future__ import annotations

from collections.abc import Sequence

from acceptance.tools.nccl.layout import Layout
from acceptance.tools.nccl.names import COLLECTIVES, REDOPS, TYPE_SIZES
from acceptance.tools.nccl.records import NcclRow

_BY_KEYS: dict[tuple[str, ...], set[str]] = {
    ("size", "count", "type"): {"all_gather", "sendrecv"},
    ("size", "count", "type", "redop"): {"all_reduce", "reduce_scatter", "alltoall"},
    ("size", "count", "type", "root"): {"broadcast"},
    ("size", "count", "type", "redop", "root"): set(COLLECTIVES),
}
_WHOLE_BUFFER = {"all_reduce", "broadcast", "reduce", "sendrecv"}
_PER_RANK = {"all_gather", "reduce_scatter", "alltoall"}


def factor(collective: str, nranks: int) -> float:
    if nranks <= 1:
        return 0.0
    if collective == "all_reduce":
        return 2.0 * (nranks - 1) / nranks
    if collective in _PER_RANK:
        return (nranks - 1) / nranks
    return 1.0


def collective_candidates(
    layout: Layout | None, rows: Sequence[NcclRow], nranks: int | None, blank_redop: bool, validation: bool
) -> set[str]:
    """The collectives the table's evidence allows (every one when there is no table)."""
    if layout is None or not rows:
        return set(COLLECTIVES)
    candidates = set(_BY_KEYS.get(layout.keys, set(COLLECTIVES)))
    if blank_redop:
        candidates &= {"alltoall"}
    roots = {r.root for r in rows if r.root is not None}
    if roots:
        candidates &= (
            {"broadcast", "reduce"} if all(x >= 0 for x in roots) else (set(COLLECTIVES) - {"broadcast", "reduce"})
        )
    redops = {r.redop for r in rows if r.redop is not None}
    if redops == {"none"}:
        candidates -= {"all_reduce", "reduce_scatter", "reduce"}
    elif redops and redops <= set(REDOPS):
        candidates &= {"all_reduce", "reduce_scatter", "reduce", "sendrecv"}
    if validation and not layout.old_error_column:
        oop_checked = any(r.oop is not None and r.oop.wrong is not None for r in rows)
        ip_na = all(r.ip is not None and r.ip.wrong is None for r in rows)
        if oop_checked:
            candidates &= {"alltoall", "sendrecv"} if ip_na else (set(COLLECTIVES) - {"alltoall", "sendrecv"})
    if nranks and nranks > 1:
        ratios = {
            r.size // (r.count * TYPE_SIZES[r.type])
            for r in rows
            if r.count and r.type in TYPE_SIZES and r.size % (r.count * TYPE_SIZES[r.type]) == 0
        }
        if ratios == {1}:
            candidates &= _WHOLE_BUFFER
        elif ratios == {nranks}:
            candidates &= _PER_RANK
        best = max(rows, key=lambda r: (r.oop.algbw or 0.0) if r.oop else 0.0)
        if len(candidates) > 1 and best.oop and best.oop.algbw and best.oop.algbw >= 1.0 and best.oop.busbw:
            seen = best.oop.busbw / best.oop.algbw
            fits = {c for c in candidates if abs(seen - factor(c, nranks)) <= 0.02 * max(1.0, seen)}
            if fits:
                candidates = fits
    return candidates
