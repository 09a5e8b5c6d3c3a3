"""Field 4: the error lines of the failing ranks, deduplicated, each with its rank, host and first/last time.

One group per (kind, text with the rank taken out): a watchdog timeout on 127 ranks is one group
with 127 occurrences. PyTorch's boilerplate notes (``Some NCCL operations have failed...``) are left
out: they add nothing to the timeout they follow. Groups come in the order they happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from acceptance.incident.inputs import Parsed
from acceptance.incident.model import NcclGroup, NcclOutput, RankMap, RankOccurrence

LEFT_OUT = frozenset({"note"})
HINT = (
    "no line of NCCL's own in these logs (at most PyTorch's view of NCCL): rerun the job with NCCL_DEBUG=INFO "
    "(and NCCL_DEBUG_SUBSYS=INIT,NET) so that NCCL names the failing peer, transport and device"
)


def utc(moment: datetime | None, offset: timedelta) -> datetime | None:
    """A log-clock time as UTC (`offset` is the log clock's offset from UTC)."""
    return moment - offset if moment is not None else None


def groups(inputs: Sequence[Parsed], ranks: RankMap, offset: timedelta) -> NcclOutput:
    table: dict[tuple[str, str], dict[int | None, dict[str, object]]] = {}
    meta: dict[tuple[str, str], dict[str, object]] = {}
    order: dict[tuple[str, str], tuple[int, int]] = {}
    for file_no, item in enumerate(inputs):
        for err in item.torch.errors:
            if err.kind in LEFT_OUT:
                continue
            key = (err.kind, err.template)
            when = utc(err.time, offset)
            order.setdefault(key, (file_no, err.line))
            meta.setdefault(key, {"op": err.op, "seq": err.seq, "timeout_ms": err.timeout_ms})
            row = table.setdefault(key, {}).setdefault(
                err.rank,
                {"host": err.host, "first": when, "last": when, "count": 0, "line": err.line, "source": item.label},
            )
            row["count"] = int(str(row["count"])) + 1
            if when is not None:
                first, last = row["first"], row["last"]
                row["first"] = when if not isinstance(first, datetime) or when < first else first
                row["last"] = when if not isinstance(last, datetime) or when > last else last
            if row["host"] is None and err.host:
                row["host"] = err.host
    by_rank = {e.rank: e for e in ranks.entries}
    out: list[NcclGroup] = []
    for key, rows in table.items():
        occurrences = []
        for rank, row in sorted(rows.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
            host = row["host"] if isinstance(row["host"], str) else None
            entry = by_rank.get(rank) if rank is not None else None
            occurrences.append(
                RankOccurrence(
                    rank=rank,
                    host=host or (entry.host if entry else None),
                    node=entry.node if entry else None,
                    first_utc=row["first"] if isinstance(row["first"], datetime) else None,
                    last_utc=row["last"] if isinstance(row["last"], datetime) else None,
                    count=int(str(row["count"])),
                    line=int(str(row["line"])),
                    source=str(row["source"]),
                )
            )
        firsts = [o.first_utc for o in occurrences if o.first_utc]
        lasts = [o.last_utc for o in occurrences if o.last_utc]
        m = meta[key]
        out.append(
            NcclGroup(
                key[0],
                key[1],
                min(firsts) if firsts else None,
                max(lasts) if lasts else None,
                tuple(occurrences),
                op=m["op"] if isinstance(m["op"], str) else None,
                seq=m["seq"] if isinstance(m["seq"], int) else None,
                timeout_ms=m["timeout_ms"] if isinstance(m["timeout_ms"], int) else None,
            )
        )
    out.sort(key=lambda g: (g.first_utc is None, g.first_utc or datetime.min, order[(g.kind, g.text)]))
    launcher = tuple(
        {**e.to_json(), "time": (utc(e.time, offset) or e.time).isoformat() if e.time else None, "source": item.label}
        for item in inputs
        for e in item.launcher
    )
    versions: list[str] = []
    for item in inputs:
        versions += [v for v in item.torch.nccl_versions if v not in versions]
    own = any(item.torch.has_nccl_own_lines for item in inputs)
    return NcclOutput(tuple(out), launcher, tuple(versions), None if own else HINT)
