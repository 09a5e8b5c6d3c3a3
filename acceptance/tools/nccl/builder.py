"""One nccl-tests report while it is being read, and the run record it becomes.

Holds the header facts, ranks, rows and trailer of one report; decides its status:
failed (a `Test … failure`/`Test timeout` line, a launcher's failure line, out-of-bounds
values, a non-zero `#wrong` in any row whatever the trailer says, a failed bandwidth or
bitwise check, a `nan`/`inf` measurement), incomplete (no trailer, no "concluded" after a
"starting", an unreadable, damaged or cut row or header line, no rows), ok otherwise.
"""

from __future__ import annotations

from typing import Any

from acceptance.tools.nccl.checks import (
    Entry,
    Sweep,
    sweep_key,
    sweep_of,
    sweep_problems,
    text_table_clean,
    wrong_na_problem,
)
from acceptance.tools.nccl.infer import collective_candidates
from acceptance.tools.nccl.layout import Layout, plain_rows
from acceptance.tools.nccl.names import collective_of, decode_nccl_code
from acceptance.tools.nccl.records import NcclError, NcclHalf, NcclRank, NcclRow, NcclRun, RunStatus
from acceptance.tools.nccl.rows import NcclRows

MAX_ERRORS = 1000


class ReportBuilder:
    """A report being read."""

    def __init__(
        self,
        start: int,
        hint: str | None,
        nccl: tuple[str | None, str | None],
        sweeps: dict[tuple[Any, ...], Sweep | None] | None = None,
    ) -> None:
        """`sweeps`: the sweeps of earlier reports of the capture, by `sweep_key` (shared, filled as read)."""
        self.start = start
        self.sweeps = {} if sweeps is None else sweeps
        self.hint = hint
        self.version: str | None = None
        self.headers: int | None = None
        self.library: int | None = None
        self.program: str | None = None
        self.params: dict[str, Any] = {}
        self.ranks: list[NcclRank] = []
        self.layout: Layout | None = None
        self.rows: list[NcclRow] = []
        #: rows kept as text by the feed loop (lines matching `PLAIN_ROW_LINE`) and their line numbers:
        #: read as records by `flush` before any other row is added, otherwise when the run's rows are first read
        self.row_lines: list[str] = []
        self.row_numbers: list[int] = []
        #: rows read but not handed on (N/A where a measurement belongs): still rows of the sweep
        self.held: list[NcclRow] = []
        self.pending: tuple[tuple[int, int, str, str | None, int | None], int] | None = None
        self.oob: int | None = None
        self.avg: float | None = None
        self.avg_failed = False
        self.bitwise = 0
        self.trailer = False
        self.concluded = False
        self.header = False
        self.errors: list[NcclError] = []
        self.error_count = 0
        self.failed = False
        self.malformed = False
        self.blank_redop = False
        self.nccl_version, self.cuda_version = nccl
        self.last = start

    @property
    def takes_text_rows(self) -> bool:
        """Whether a clean plain row may be kept as text now: a plain table is open and no row preamble waits."""
        layout = self.layout
        return layout is not None and layout.plain and not self.trailer and self.pending is None

    def flush(self) -> None:
        """Read the rows kept as text into `rows`."""
        if self.row_lines:
            self.rows.extend(plain_rows(self.row_lines, self.row_numbers))
            self.row_lines = []
            self.row_numbers = []

    def error(
        self, line: int, text: str, failed: bool = False, host: str | None = None, kind: str | None = None
    ) -> None:
        self.failed = self.failed or failed
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(NcclError(line, text.strip(), host, kind))

    def damaged(self, line: int, text: str) -> None:
        """A line of the report that cannot be read: the run can no longer be complete."""
        self.malformed = True
        self.error(line, text, kind="output")

    @property
    def complete(self) -> bool:
        return self.trailer and (self.concluded or self.program is None)

    def status(self) -> RunStatus:
        if self.failed or (self.oob or 0) > 0 or self.avg_failed or self.bitwise > 0:
            return "failed"
        if not self.complete or self.malformed or not (self.rows or self.row_lines):
            return "incomplete"
        return "ok"

    def _check_wrong(self) -> None:
        """A non-zero `#wrong` is corrupted data, whatever the trailer's count says."""
        for row in self.rows:
            oop, ip = row.oop, row.ip
            if not ((oop is not None and oop.wrong) or (ip is not None and ip.wrong)):
                continue  # most rows: nothing to say, said cheaply
            for name, half in (("out-of-place", oop), ("in-place", ip)):
                if half is not None and half.wrong:
                    self.error(
                        row.line,
                        f"#wrong {half.wrong:g} {name} at size {row.size} ({row.type})"
                        + (f" although the trailer says {self.oob} out of bounds" if not self.oob else ""),
                        failed=True,
                        kind="output",
                    )

    def _check_blank_redop(self) -> None:
        """Old alltoall tables leave `redop` blank in every row; a row unlike the others lost a column."""
        if self.layout is None or self.layout.unified or "redop" not in self.layout.keys:
            return
        self.flush()
        blank = [r for r in self.rows if r.redop is None]
        if not blank:
            return
        odd = blank if 2 * len(blank) < len(self.rows) else [r for r in self.rows if r.redop is not None]
        for row in odd:
            self.damaged(row.line, f"data row with {'no' if row.redop is None else 'a'} redop, unlike the table's rows")
        if odd:
            dropped = {id(r) for r in odd}
            self.rows = [r for r in self.rows if id(r) not in dropped]
        self.blank_redop = any(r.redop is None for r in self.rows)

    def _entries(self) -> list[Entry]:
        """What `checks` reads of every row: the records', then the text rows'."""
        has_wrong = self.layout is not None and "#wrong" in self.layout.half
        has_error = self.layout is not None and "error" in self.layout.half
        entries = [
            Entry(
                r.line,
                r.size,
                r.type,
                r.redop,
                r.root,
                _wrong_na(r.oop, has_wrong, has_error),
                _wrong_na(r.ip, has_wrong, has_error),
            )
            for r in (*self.rows, *self.held)
        ]
        if self.row_lines:  # 13 tokens a line (`PLAIN_ROW_LINE`): all split at once, read a column at a time
            tokens = " ".join(self.row_lines).split()
            entries += map(
                Entry,
                self.row_numbers,
                map(int, tokens[0::13]),
                tokens[2::13],
                tokens[3::13],
                map(int, tokens[4::13]),
                [t == "N/A" for t in tokens[8::13]],
                [t == "N/A" for t in tokens[12::13]],
            )
        if self.held:
            entries.sort(key=lambda e: e.line)
        return entries

    def _check_table(self, collective: str | None, params: dict[str, Any]) -> bool:
        """Mark the run damaged where a `#wrong` N/A has no reason or the sizes leave the sweep.

        Rows whose N/A has no reason are dropped (True then: `rows` holds every row left as a record).
        """
        if not (self.rows or self.row_lines or self.held):
            return False
        nranks = len(self.ranks) or None
        if not (self.rows or self.held):  # most tables: text rows only, checked a column at a time
            key = sweep_key(params)
            if key not in self.sweeps:
                self.sweeps[key] = sweep_of(params)
            if text_table_clean(self.row_lines, params, collective, nranks, self.sweeps[key]):
                return False
        entries = self._entries()
        validation = params.get("validation")
        bad: set[int] = set()
        if isinstance(validation, int) and validation:
            for entry in entries:
                if entry.oop_wrong_na or entry.ip_wrong_na:
                    why = wrong_na_problem(entry, validation, collective)
                    if why is not None:
                        self.damaged(entry.line, f"{why} (size {entry.size}, {entry.type})")
                        bad.add(entry.line)
        some_ip_na = any(e.ip_wrong_na for e in entries)
        # alltoall/sendrecv print an in-place N/A in every row, the others in none
        if collective is None and not bad and validation and some_ip_na and not all(e.ip_wrong_na for e in entries):
            for entry in entries:
                if entry.ip_wrong_na:
                    self.damaged(entry.line, f"#wrong is N/A in-place in this row only (size {entry.size})")
                    bad.add(entry.line)
        for line, text in sweep_problems(entries, params, collective, nranks):
            self.damaged(line, text)
        if not bad:
            return False
        self.flush()
        self.rows = [r for r in self.rows if r.line not in bad]
        return True

    def finish(self, caller_collective: str | None) -> NcclRun:
        self._check_blank_redop()
        self._check_wrong()
        rows = NcclRows(self.rows, self.row_lines, self.row_numbers)
        params = dict(self.params)
        collective: str | None = None
        origin: str | None = None
        if self.program:
            params["program"] = self.program
            collective, origin = collective_of(self.program), "output"
        if collective is None and caller_collective:
            collective, origin = caller_collective, "caller"
        if collective is None:
            allowed = collective_candidates(
                self.layout, rows, len(self.ranks) or None, self.blank_redop, bool(params.get("validation", 1))
            )
            hinted = collective_of(self.hint) if self.hint else None
            if hinted is not None and hinted in allowed:
                collective, origin = hinted, "command"
            elif len(allowed) == 1:
                collective, origin = next(iter(allowed)), "inferred"
        params["collective_from"] = origin
        if self._check_table(collective, params):
            rows = NcclRows(self.rows)
        if self.headers is not None:
            params["nccl_headers"] = decode_nccl_code(self.headers)
        if self.layout is not None:
            params["columns"] = list(self.layout.keys) + list(self.layout.half)
        if self.error_count > len(self.errors):
            self.errors.append(
                NcclError(
                    self.errors[-1].line,
                    f"... {self.error_count - len(self.errors)} more error lines not kept",
                )
            )
        nccl_version = decode_nccl_code(self.library) if self.library else self.nccl_version
        return NcclRun(
            collective=collective,
            nccl_tests_version=self.version,
            nccl_version=nccl_version,
            cuda_version=self.cuda_version,
            ranks=tuple(self.ranks),
            params=params,
            rows=rows,
            avg_busbw=self.avg,
            out_of_bounds=self.oob,
            status=self.status(),
            errors=tuple(self.errors),
            lines=(self.start, self.last),
        )


def _wrong_na(half: NcclHalf | None, has_wrong: bool, has_error: bool) -> bool:
    """Whether a half prints N/A in its `#wrong` (or old `error`) column."""
    if half is None:
        return False
    if has_wrong:
        return half.wrong is None
    return has_error and half.extras.get("error", 0.0) is None
