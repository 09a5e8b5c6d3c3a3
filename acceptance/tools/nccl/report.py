"""One nccl-tests report while it is being read, and the run record it becomes.

Holds the header facts, ranks, rows and trailer of one report; decides its status:
failed (a `Test … failure`/`Test timeout` line, a launcher's failure line, out-of-bounds
values, a non-zero `#wrong` in any row whatever the trailer says, a failed bandwidth or
bitwise check, a `nan`/`inf` measurement), incomplete (no trailer, no "concluded" after a
"starting", an unreadable, damaged or cut row or header line, no rows), ok otherwise.
"""

from __future__ import annotations

from typing import Any

from acceptance.tools.nccl.infer import collective_candidates
from acceptance.tools.nccl.layout import Layout, plain_rows
from acceptance.tools.nccl.names import collective_of, decode_nccl_code
from acceptance.tools.nccl.records import NcclError, NcclRank, NcclRow, NcclRun, RunStatus
from acceptance.tools.nccl.rows import NcclRows

MAX_ERRORS = 1000


class ReportBuilder:
    """A report being read."""

    def __init__(self, start: int, hint: str | None, nccl: tuple[str | None, str | None]) -> None:
        self.start = start
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
