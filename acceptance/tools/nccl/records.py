"""Records of a parsed nccl-tests capture, and their stable JSON (`acceptance parse nccl`).

Frozen values: a capture holds runs (one per report printed by an nccl-tests
binary), a run holds its rank map, header parameters and rows. `to_json` and
`from_json` round-trip, so a baseline can store runs as that JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from acceptance.jsontext import JsonItems

if TYPE_CHECKING:
    import pandas as pd

RunStatus = Literal["ok", "failed", "incomplete"]

#: optional per-half extras (old ``error`` column, ``#bitdiff``, ``-I`` per-iteration columns)
HALF_EXTRAS: tuple[str, ...] = ("error", "bitdiff", "i_min_us", "i_max_us", "i_p99_us", "i_cv_pct")


def _num(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):  # nccl-tests' own JSON writes NaN as "nan"
        return math.nan if value.strip().lower() == "nan" else float(value)
    return float(value)


def _json_float(value: float | None) -> float | str | None:
    if value is None:
        return None
    return "nan" if math.isnan(value) else value


@dataclass(frozen=True, slots=True)
class NcclHalf:
    """One placement (out-of-place or in-place) of one row; `wrong` is None where N/A."""

    time_us: float | None
    algbw: float | None
    busbw: float | None
    wrong: float | None
    extras: Mapping[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "time_us": _json_float(self.time_us),
            "algbw": _json_float(self.algbw),
            "busbw": _json_float(self.busbw),
            "wrong": _json_float(self.wrong),
        }
        if self.extras:  # most halves have none
            for key in HALF_EXTRAS:
                if key in self.extras:
                    doc[key] = _json_float(self.extras[key])
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any] | None) -> NcclHalf | None:
        if doc is None:
            return None
        extras = {k: _num(doc[k]) for k in HALF_EXTRAS if k in doc}
        return cls(
            _num(doc.get("time_us")),
            _num(doc.get("algbw")),
            _num(doc.get("busbw")),
            _num(doc.get("wrong")),
            extras,
        )


@dataclass(frozen=True, slots=True)
class NcclRow:
    """One data row: a message size (and type/op/root) measured out of place and in place."""

    size: int
    count: int
    type: str
    redop: str | None
    root: int | None
    oop: NcclHalf | None
    ip: NcclHalf | None
    timestamp: str | None = None
    line: int = field(default=0, compare=False)

    @property
    def key(self) -> tuple[int, str, str | None, int | None]:
        """What identifies a row when `-d all`/`-o all` make sizes repeat."""
        return (self.size, self.type, self.redop, self.root)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "size": self.size,
            "count": self.count,
            "type": self.type,
            "redop": self.redop,
            "root": self.root,
            "oop": self.oop.to_json() if self.oop else None,
            "ip": self.ip.to_json() if self.ip else None,
        }
        if self.timestamp is not None:
            doc["timestamp"] = self.timestamp
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NcclRow:
        return cls(
            size=int(doc["size"]),
            count=int(doc["count"]),
            type=str(doc["type"]),
            redop=doc.get("redop"),
            root=None if doc.get("root") is None else int(doc["root"]),
            oop=NcclHalf.from_json(doc.get("oop")),
            ip=NcclHalf.from_json(doc.get("ip")),
            timestamp=doc.get("timestamp"),
        )


def row_json_text(row: NcclRow) -> str:
    """`json.dumps(row.to_json())`: one row's JSON on one line."""
    return json.dumps(row.to_json())


@dataclass(frozen=True, slots=True)
class NcclRank:
    """One `#  Rank …` line: where a rank ran."""

    rank: int
    host: str
    device: int
    busid: str
    gpu: str
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "host": self.host,
            "device": self.device,
            "busid": self.busid,
            "gpu": self.gpu,
            "pid": self.pid,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NcclRank:
        pid = doc.get("pid")
        return cls(
            int(doc["rank"]),
            str(doc["host"]),
            int(doc["device"]),
            str(doc["busid"]),
            str(doc["gpu"]),
            None if pid is None else int(pid),
        )


@dataclass(frozen=True)
class NcclError:
    """A line that reports a failure, with its 1-based line number in the capture.

    `kind` says who printed it: ``test`` (nccl-tests' `Test … failure` lines), ``nccl`` (NCCL WARN),
    ``launcher`` (mpirun/prterun, srun, ssh, PALS), ``output`` (a line of the report itself that
    could not be read: a damaged row, a cut line, a trailer that contradicts the rows), None for
    any other error-looking line. `host` is the host the line names, when it names one.
    """

    line: int
    text: str
    host: str | None = None
    kind: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "host": self.host, "kind": self.kind}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NcclError:
        host, kind = doc.get("host"), doc.get("kind")
        return cls(
            int(doc["line"]), str(doc["text"]), None if host is None else str(host), None if kind is None else str(kind)
        )

    @property
    def is_failure(self) -> bool:
        """A line in which nccl-tests, NCCL or a launcher reports a failure (not a parser complaint)."""
        return self.kind in ("test", "nccl", "launcher")

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass(frozen=True)
class NcclRun:
    """One report of one nccl-tests binary (one collective)."""

    collective: str | None
    nccl_tests_version: str | None
    nccl_version: str | None
    cuda_version: str | None
    ranks: tuple[NcclRank, ...]
    params: Mapping[str, Any]
    #: a tuple, or the parser's `NcclRows` (read from the printed text when first used)
    rows: Sequence[NcclRow]
    avg_busbw: float | None
    out_of_bounds: int | None
    status: RunStatus
    errors: tuple[NcclError, ...] = ()
    #: first and last line of the report in the capture (0 when not known)
    lines: tuple[int, int] = field(default=(0, 0), compare=False)

    @property
    def nranks(self) -> int | None:
        return len(self.ranks) or None

    @property
    def hosts(self) -> tuple[str, ...]:
        """Hosts in rank order, each once."""
        return tuple(dict.fromkeys(r.host for r in self.ranks))

    @property
    def program(self) -> str | None:
        value = self.params.get("program")
        return str(value) if value else None

    def to_json(self, rows_as_text: bool = False) -> dict[str, Any]:
        """The run's JSON document; with `rows_as_text`, "rows" holds each row's JSON text (`JsonItems`)."""
        rows: list[Any]
        if not rows_as_text:
            rows = [r.to_json() for r in self.rows]
        elif callable(texts := getattr(self.rows, "json_texts", None)):  # `NcclRows`: from the printed text
            rows = texts()
        else:
            rows = JsonItems(row_json_text(r) for r in self.rows)
        return {
            "collective": self.collective,
            "nccl_tests_version": self.nccl_tests_version,
            "nccl_version": self.nccl_version,
            "cuda_version": self.cuda_version,
            "nranks": self.nranks,
            "hosts": list(self.hosts),
            "ranks": [r.to_json() for r in self.ranks],
            "params": dict(self.params),
            "rows": rows,
            "avg_busbw": self.avg_busbw,
            "out_of_bounds": self.out_of_bounds,
            "status": self.status,
            "errors": [e.to_json() for e in self.errors],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NcclRun:
        status = doc.get("status", "incomplete")
        if status not in ("ok", "failed", "incomplete"):
            raise ValueError(f"run status {status!r}: expected ok, failed or incomplete")
        return cls(
            collective=doc.get("collective"),
            nccl_tests_version=doc.get("nccl_tests_version"),
            nccl_version=doc.get("nccl_version"),
            cuda_version=doc.get("cuda_version"),
            ranks=tuple(NcclRank.from_json(r) for r in doc.get("ranks", ())),
            params=dict(doc.get("params", {})),
            rows=tuple(NcclRow.from_json(r) for r in doc.get("rows", ())),
            avg_busbw=_num(doc.get("avg_busbw")),
            out_of_bounds=None if doc.get("out_of_bounds") is None else int(doc["out_of_bounds"]),
            status=status,
            errors=tuple(NcclError.from_json(e) for e in doc.get("errors", ())),
        )

    def frame(self) -> pd.DataFrame:
        """One row per printed row: size, count, type, redop, root, oop_* and ip_* figures."""
        import pandas as pd

        columns = ["size", "count", "type", "redop", "root"]
        for prefix in ("oop", "ip"):
            columns += [f"{prefix}_time_us", f"{prefix}_algbw", f"{prefix}_busbw", f"{prefix}_wrong"]
        records = []
        for row in self.rows:
            record: list[Any] = [row.size, row.count, row.type, row.redop, row.root]
            for half in (row.oop, row.ip):
                if half is None:
                    record += [None, None, None, None]
                else:
                    record += [half.time_us, half.algbw, half.busbw, half.wrong]
            records.append(record)
        frame = pd.DataFrame.from_records(records, columns=columns)
        for name in columns[5:]:
            frame[name] = frame[name].astype("float64")
        return frame


@dataclass(frozen=True)
class NcclCapture:
    """Everything found in one captured output: zero or more runs, plus errors outside them.

    `recognised` is False when the text holds nothing of nccl-tests, NCCL or a known launcher
    (`acceptance parse nccl` then exits 2: not recognised).
    """

    status: RunStatus
    runs: tuple[NcclRun, ...]
    errors: tuple[NcclError, ...] = ()
    source: str = field(default="<text>", compare=False)
    recognised: bool = field(default=True, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "nccl-tests",
            "status": self.status,
            "runs": [r.to_json() for r in self.runs],
            "errors": [e.to_json() for e in self.errors],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NcclCapture:
        if doc.get("kind", "nccl-tests") != "nccl-tests":
            raise ValueError(f"kind {doc.get('kind')!r}: expected 'nccl-tests'")
        status = doc.get("status", "incomplete")
        if status not in ("ok", "failed", "incomplete"):
            raise ValueError(f"capture status {status!r}: expected ok, failed or incomplete")
        return cls(
            status=status,
            runs=tuple(NcclRun.from_json(r) for r in doc.get("runs", ())),
            errors=tuple(NcclError.from_json(e) for e in doc.get("errors", ())),
        )

    def run(self, collective: str) -> NcclRun:
        """The (last) run of one collective; KeyError naming what is there otherwise."""
        found = [r for r in self.runs if r.collective == collective]
        if not found:
            present = ", ".join(str(r.collective) for r in self.runs) or "none"
            raise KeyError(f"no {collective} run in the capture (runs: {present})")
        return found[-1]


def capture_status(
    runs: Iterable[RunStatus], errors: tuple[NcclError, ...], failed: bool, cut: bool = False
) -> RunStatus:
    """A capture is ok only when it has runs, all ok, and it was not cut inside a report.

    Without runs it is failed when it holds a failure line (the run died before nccl-tests
    printed its header), incomplete otherwise.
    """
    statuses = list(runs)
    if failed or "failed" in statuses:
        return "failed"
    if not statuses:
        return "failed" if any(e.is_failure for e in errors) else "incomplete"
    if cut or "incomplete" in statuses:
        return "incomplete"
    return "ok"


def first_failure(errors: Iterable[NcclError]) -> NcclError | None:
    """The first line in which nccl-tests, NCCL or a launcher reports a failure."""
    return next((e for e in errors if e.is_failure), None)
