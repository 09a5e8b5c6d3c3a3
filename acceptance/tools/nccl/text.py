"""Streaming parser of nccl-tests text output (every generation, 2.0 … 2.19).

One pass over lines, memory bounded by the parsed rows and ranks (or by one report, when
finished runs are handed to a `sink`). Only the root process prints the report; everything
else (NCCL INFO/WARN, launcher, ssh, UCX) is foreign and may sit anywhere, even between rows.
Launcher tags (`[1,0]<stdout>:`, `0: `, kubectl's RFC 3339 times) are stripped first. Reports
start at `# nccl-tests version`, `# Collective test starting` or `# nThread`, whichever the
version prints first; a report is complete after its trailer (and, when it said "starting",
after "concluded").

Never half a result reported as success: a capture is `ok` only if every report in it is
complete and clean. A line inside a table that is neither a row nor known noise, a damaged
header, a `nan`, a `#wrong` the trailer does not count, or a last line with no line end
inside a report (the capture was cut) each leave an error with its line number. Failure lines
(nccl-tests', NCCL WARN, launchers': `failures.classify`) are kept with the host they name,
so that a run that died before the header is a failure with its cause, not "no output".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.nccl.builder import MAX_ERRORS, ReportBuilder
from acceptance.tools.nccl.checks import Sweep, missing_measurement
from acceptance.tools.nccl.failures import BOX_RULE, LAUNCHER, TEST, classify
from acceptance.tools.nccl.layout import (
    PLAIN_ROW_LINE,
    UNIFIED_PREAMBLE_WIDTH,
    Layout,
    NonFinite,
    layout_from_header,
)
from acceptance.tools.nccl.names import normalize_collective
from acceptance.tools.nccl.records import (
    NcclCapture,
    NcclError,
    NcclRank,
    NcclRow,
    NcclRun,
    RunStatus,
    capture_status,
)

#: first characters of an INFO line that may carry a row preamble or a launcher tag before it
_MAYBE_GLUED = frozenset(" 0123456789[")

#: launcher tags: `mpirun --tag-output`, `srun --label`, `kubectl logs --timestamps`
_PREFIX = re.compile(
    r"\[\d+,\d+\]<(?:stdout|stderr)>:|\d+: |\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) "
)
_RANK = re.compile(
    r"#\s+Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]+)\]\s*(.*?)\s*$"
)
_NTHREAD = re.compile(
    r"#?\s*nThread:?\s+(\d+)\s+nGpus:?\s+(\d+)\s+minBytes:?\s+(\d+)\s+maxBytes:?\s+(\d+)\s+"
    r"step:\s+(\d+)\((factor|bytes)\)\s+warmup iters:\s+(\d+)\s+iters:\s+(\d+)"
    r"(?:\s+agg iters:\s+(\d+))?\s+validation:\s+(\d+)(?:\s+graph:\s+(\d+))?(?:\s+unalign:\s+(\d+))?"
)
_NTHREAD_EXPECTED = (
    "'# nThread T nGpus G minBytes N maxBytes N step: S(factor|bytes) warmup iters: W iters: N … validation: C'"
)
_HEADER_EXPECTED = "a column header naming size count type [redop] [root] and two halves of time algbw busbw #wrong"
_VERSION = re.compile(r"# nccl-tests version (\S+)(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?")
_STARTING = re.compile(r"# Collective test starting: (\S+)")
_OOB = re.compile(r"#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_BITWISE = re.compile(r"# Bitwise mismatches\s*:\s*(\d+)")
_REDUCING = re.compile(r"# Reducing maxBytes to (\d+)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\S*?\+cuda(\d+\.\d+))?")
_LAUNCHER_ERROR = re.compile(
    r"(?i)\b(?:failed|failure|error|invalid|abort(?:ed)?|killed|terminated|segmentation fault|"
    r"core dumped|exited with non-zero|exit code)\b"
)
#: what `_LAUNCHER_ERROR` needs in a line (lower case): a cheap test before the pattern
_ERROR_WORD = re.compile("fail|error|invalid|abort|kill|terminat|segmentation|core dump|exit")
_COMMAND = re.compile(r"(?:^|[\s/])([a-z][a-z_]*?_perf(?:_mpi)?)(?=\s|$)")
_NUMERIC = re.compile(r"[-+]?(?:\d[\d.,_]*|\.\d+)(?:[eE][-+]?\d+)?%?$|N/A$|(?i:[-+]?(?:nan|inf))$")
#: NCCL's table of enabled algorithms and protocols, printed at init with NCCL_DEBUG=INFO (no INFO prefix):
#: `     Function |       LL     LL128    Simple   |          Tree           Ring …`, one row per collective
#: (its cells: 0/1, or the protocol and algorithm names; a line with any other word takes the full path)
_TUNING_CELL = r"(?: +(?:\d+|LL|LL128|Simple|Tree|Ring|CollNetDirect|CollNetChain|NVLS|NVLSTree|PAT))+"
_NCCL_TUNING = re.compile(
    r" *(?:Function|Broadcast|Reduce|AllGather|ReduceScatter|AllReduce|SendRecv|AllToAll|Gather|Scatter)"
    rf" +\|{_TUNING_CELL} +\|{_TUNING_CELL} *$"
)
#: lines of an Open MPI help box kept as errors after its failure sentence
_BOX_LINES = 12


def _letter(token: str) -> bool:
    """Whether a token starts with an ASCII letter (a row's type column: `float`, `bfloat16`)."""
    first = token[:1]
    return ("a" <= first <= "z") or ("A" <= first <= "Z")


def _row_like(line: str) -> bool:
    """Whether a line that is not a readable row still looks like one (a damaged data row)."""
    if "|" in line or " NCCL " in line:
        return False
    tokens = line.split()
    if len(tokens) < 4:
        return False
    numeric = sum(1 for t in tokens if _NUMERIC.match(t) or any(c.isdigit() for c in t))
    return numeric * 2 >= len(tokens) + 2


class TextParser:
    """Feed lines with `feed`, then call `finish` once.

    With a `sink`, each finished run is handed to it and not kept (the capture then holds no
    runs, only the status and errors), so memory stays that of one report.
    """

    def __init__(
        self,
        source: str = "<text>",
        collective: str | None = None,
        sink: Callable[[NcclRun], None] | None = None,
    ) -> None:
        self.source = source
        self.collective = normalize_collective(collective) if collective else None
        self.sink = sink
        self.run: ReportBuilder | None = None
        self.runs: list[NcclRun] = []
        self.statuses: list[RunStatus] = []
        self.errors: list[NcclError] = []
        self.failed = False
        self.cut = False
        self.recognised = False
        self.hint: str | None = None
        self.nccl: tuple[str | None, str | None] = (None, None)
        self.box = 0
        self.rule_at = -1
        self.header_error: ParseError | None = None
        self.last_number = 0
        self.ended_lines = False  # whether any line came with its line end (a capture, not split lines)
        self.unended: tuple[str, int] | None = None
        self.want_version = True
        self.content = False  # a report with ranks or rows was read
        self.sweeps: dict[tuple[Any, ...], Sweep | None] = {}  # each header's sweep, computed once per capture

    # -- driving ---------------------------------------------------------------------------
    def feed(self, lines: Iterable[str], first_line: int = 1) -> None:
        dispatch = self._dispatch
        glued = _MAYBE_GLUED
        row_line = PLAIN_ROW_LINE
        number = first_line - 1
        info = False
        for number, raw in enumerate(lines, first_line):
            if " NCCL INFO " in raw:  # most lines of an NCCL_DEBUG=INFO capture: one scan, then skipped
                info = True
                if self.want_version and " NCCL INFO NCCL version" in raw:
                    self._nccl_version(raw)
                if raw[0] not in glued:
                    continue
            if self.unended is not None:  # it was not the last line after all
                dispatch(*self.unended)
                self.unended = None
            # most rows: kept as text, read with the others in one batch (`ReportBuilder.takes_text_rows`)
            if raw[:1] == " " and (run := self.run) is not None and run.takes_text_rows and row_line(raw):
                self.ended_lines = True
                run.row_lines.append(raw)
                run.row_numbers.append(number)
                run.last = number
                continue
            if raw[-1:] == "\n" or raw[-1:] == "\r":
                self.ended_lines = True
                dispatch(raw.rstrip("\r\n"), number)
            else:
                self.unended = (raw, number)
        self.recognised = self.recognised or info
        self.last_number = max(self.last_number, number)

    def _refresh_want(self) -> None:
        """Whether an `NCCL version` INFO line would tell anything new (the open report's, or the next one's);
        set where that can change (a report opens or completes, a version is found), read per INFO line."""
        run = self.run
        if run is not None and not run.complete:
            self.want_version = run.nccl_version is None
        else:
            self.want_version = self.nccl[0] is None

    def finish(self) -> NcclCapture:
        if self.unended is not None:
            line, number = self.unended
            self.unended = None
            if number == self.last_number and self.ended_lines:
                self._last_line(line, number)
            else:
                self._dispatch(line, number)
        self._close()
        if self.header_error is not None and not self._has_content():
            raise self.header_error
        errors = tuple(self.errors)
        status = capture_status(self.statuses, errors, self.failed, self.cut)
        return NcclCapture(status, tuple(self.runs), errors, self.source, self.recognised)

    def _has_content(self) -> bool:
        return self.failed or self.content or any(e.is_failure for e in self.errors)

    def _last_line(self, line: str, number: int) -> None:
        """The capture ends inside this line (no line end): a report line is cut, never read as whole."""
        text = line
        while (m := _PREFIX.match(text)) is not None and m.end() > 0:
            text = text[m.end() :]
        body = text.strip()
        run = self.run
        report_line = body.startswith("#") or (run is not None and run.layout is not None and _row_like(body))
        if not body or not report_line:
            self._dispatch(line, number)
            return
        if body == "#" and (run is None or run.complete):
            return  # the blank comment line that closes a report
        if run is not None and run.program and body == f"# Collective test concluded: {run.program}":
            self._dispatch(line, number)  # complete although its line end is missing
            return
        shown = f"the capture ends inside line {number} (no line end: cut short): {body[:120]}"
        if run is not None and not run.complete:
            run.damaged(number, shown)
        else:
            self.cut = True
            self._capture_error(number, shown, kind="output")

    # -- per line ----------------------------------------------------------------------------
    def _dispatch(self, line: str, number: int) -> None:
        if not line:
            return
        c = line[0]
        if c == "#":
            self._hash(line, number)
        elif c == " " or c.isdigit():
            self._spaced(line, number)
        elif c == "[" and (m := _PREFIX.match(line)):
            self._dispatch(line[m.end() :], number)
        else:
            self._foreign(line, number)

    def _hash(self, line: str, number: int) -> None:
        run = self.run
        if line.startswith(("#  Rank", "#   Rank")):
            if run is not None:
                rank = _rank(line)
                if rank is not None:
                    run.ranks.append(rank)
                    run.last = number
                else:
                    run.error(number, f"unreadable rank line: {line.strip()}", kind="output")
            return
        if line[2:3] in ("", " "):  # '#' alone, or blanks after it: the column header, its units, placement line
            if run is not None and (run.layout is None or run.trailer):
                self._column_header(run, line, number)
            return
        if line.startswith("# nccl-tests version"):
            run = self._open(number)
            m = _VERSION.match(line)
            if m:
                run.version = m.group(1)
                run.headers = int(m.group(2)) if m.group(2) else None
                run.library = int(m.group(3)) if m.group(3) else None
            return
        if line.startswith("# Collective test starting"):
            if run is None or run.program is not None or run.header:
                run = self._open(number)
            m = _STARTING.match(line)
            run.program = m.group(1) if m else "?"
            run.last = number
            return
        if line.startswith("# nThread") or line.startswith("#nThread"):
            self._nthread(line, number)
            return
        if run is None:
            return
        if (run.layout is None or run.trailer) and self._column_header(run, line, number):
            return
        if line.startswith("# Out of bounds") or line.startswith("# Avg bus") or line.startswith("# Bitwise"):
            self._trailer(line, number)
        elif line.startswith("# Collective test concluded"):
            run.concluded = True
            run.last = number
            self._refresh_want()
        elif line.startswith("# error:"):
            text = line[len("# error:") :].strip()
            if text:
                run.error(number, line)
        elif line.startswith("# Reducing maxBytes"):
            m = _REDUCING.match(line)
            if m:
                run.params["max_bytes_effective"] = int(m.group(1))
        elif line.startswith("# Writing JSON output to "):
            run.params["json_output"] = line[len("# Writing JSON output to ") :].strip()
        elif line.startswith("# Blocking Enabled"):
            run.params["blocking"] = True
        elif line.startswith("# Per-Iteration Report"):
            run.params["per_iteration"] = True
        elif line.startswith("# Parallel Init Enabled"):
            run.params["parallel_init"] = True

    def _column_header(self, run: ReportBuilder, line: str, number: int) -> bool:
        """Whether a '#' line is a table's column header (its layout read into `run`, or reported damaged)."""
        names = line[1:].split()
        if names[:2] != ["size", "count"]:
            return False
        layout = layout_from_header(names)
        if layout is None:
            self._header_damaged(run, number, line, _HEADER_EXPECTED)
        else:
            run.flush()  # rows read through the layout they were printed under
            run.layout = layout
            run.last = number
        return True

    def _header_damaged(self, run: ReportBuilder, number: int, line: str, expected: str) -> None:
        """A header line of the report that does not have its documented shape."""
        run.damaged(number, f"expected {expected}, found {line.strip()[:120]!r}")
        if self.header_error is None:
            self.header_error = ParseError(self.source, number, line.strip(), expected)

    def _nthread(self, line: str, number: int) -> None:
        run = self.run
        if run is None or run.header:
            run = self._open(number)
        run.header = True
        run.last = number
        m = _NTHREAD.match(line)
        if not m:
            self._header_damaged(run, number, line, _NTHREAD_EXPECTED)
            return
        p = run.params
        p["nthreads"], p["ngpus"] = int(m.group(1)), int(m.group(2))
        p["min_bytes"], p["max_bytes"] = int(m.group(3)), int(m.group(4))
        p["step_factor" if m.group(6) == "factor" else "step_bytes"] = int(m.group(5))
        p["warmup_iters"], p["iters"] = int(m.group(7)), int(m.group(8))
        if m.group(9) is not None:
            p["agg_iters"] = int(m.group(9))
        p["validation"] = int(m.group(10))
        if m.group(11) is not None:
            p["graph"] = int(m.group(11))
        if m.group(12) is not None:
            p["unalign"] = int(m.group(12))

    def _trailer(self, line: str, number: int) -> None:
        run = self.run
        assert run is not None
        run.last = number
        m = _OOB.match(line)
        if m:
            run.oob = int(m.group(1))
            if run.oob:
                run.error(number, line)
            return
        m = _AVG.match(line)
        if m:
            try:
                run.avg = float(m.group(1))
            except ValueError:
                run.avg = None
            if run.avg is None or not (math.isfinite(run.avg) and run.avg >= 0):
                run.avg = None
                run.damaged(number, f"unreadable average (expected '# Avg bus bandwidth : <number>'): {line}")
            run.trailer = True
            self._refresh_want()
            if m.group(2) == "FAILED":
                run.avg_failed = True
                run.error(number, line)
            return
        m = _BITWISE.match(line)
        if m:
            run.bitwise = int(m.group(1))
            if run.bitwise:
                run.error(number, line)

    def _spaced(self, line: str, number: int) -> None:
        run = self.run
        if run is not None and run.layout is not None and not run.trailer:
            tokens = line.split()
            if len(tokens) >= 3 and tokens[0].isdigit() and tokens[1].isdigit() and _letter(tokens[2]):
                self._row(run, run.layout, line, tokens, number)
                return
            try:
                if run.pending is not None:
                    joined = run.layout.join(run.pending[0], tokens, run.pending[1])
                    if joined is not None:
                        self._keep_row(run, joined, number)
                        return
                elif len(tokens) == run.layout.need and run.layout.halves(tokens) is not None:
                    run.damaged(number, f"numbers of a data row whose size was lost: {line.strip()}")
                    return
            except NonFinite as exc:
                self._non_finite(run, number, line, exc.token)
                return
        if line.lstrip().startswith(".. "):
            self._foreign(line, number)
            return
        m = _PREFIX.match(line)
        if m and line[0].isdigit():
            self._dispatch(line[m.end() :], number)
            return
        self._foreign(line, number)

    def _row(self, run: ReportBuilder, layout: Layout, line: str, tokens: list[str], number: int) -> None:
        try:
            row = layout.row(tokens, number)
        except NonFinite as exc:
            self._non_finite(run, number, line, exc.token)
            return
        if row is not None:
            self._keep_row(run, row, number)
            return
        pre = None
        if layout.unified and len(line) > UNIFIED_PREAMBLE_WIDTH and not line[UNIFIED_PREAMBLE_WIDTH].isspace():
            # NCCL or nccl-tests output glued to a row whose numbers had not been printed yet
            pre = layout.preamble(line[:UNIFIED_PREAMBLE_WIDTH].split())
            rest = line[UNIFIED_PREAMBLE_WIDTH:]
            if pre is not None and not _row_like(rest):
                self._foreign(rest, number)
            else:
                pre = None
        if pre is None and len(tokens) <= len(layout.keys):
            pre = layout.preamble(tokens)
        if pre is not None:
            self._lose_pending(run)
            run.pending = (pre, number)
            return
        run.damaged(
            number,
            f"unreadable data row (expected {' '.join(layout.keys)} then 2 x {' '.join(layout.half)}): {line.strip()}",
        )

    def _keep_row(self, run: ReportBuilder, row: NcclRow, number: int) -> None:
        if run.pending is not None and row.line != run.pending[1]:
            self._lose_pending(run)
        run.pending = None
        missing = missing_measurement(row)
        if missing is not None:
            run.damaged(
                row.line,
                f"N/A where {missing} belongs at size {row.size} ({row.type}): nccl-tests prints N/A only in #wrong",
            )
            run.held.append(row)
            run.last = number
            return
        run.flush()
        run.rows.append(row)
        run.last = number

    def _lose_pending(self, run: ReportBuilder) -> None:
        if run.pending is not None:
            run.damaged(run.pending[1], "data row cut short (its numbers never came)")
            run.pending = None

    def _non_finite(self, run: ReportBuilder, number: int, line: str, token: str) -> None:
        run.pending = None
        run.error(number, f"data row with a non-finite value {token!r}: {line.strip()}", failed=True, kind="output")

    def _foreign(self, line: str, number: int) -> None:
        if " NCCL INFO " in line or ("|" in line and _NCCL_TUNING.match(line)):
            self.recognised = True
            return
        run = self.run
        failure = classify(line)
        if failure is not None:
            self.recognised = True
            failed = failure.kind in (TEST, LAUNCHER)
            if failure.kind == LAUNCHER and self.rule_at == number - 1:
                self.box = _BOX_LINES
            if run is not None:
                run.error(number, line, failed=failed, host=failure.host, kind=failure.kind)
            else:
                self.failed = self.failed or failed
                self._capture_error(number, line, failure.host, failure.kind)
            return
        if BOX_RULE.match(line):
            self.rule_at = number
            self.box = 0
            return
        if self.box:
            self.box -= 1
            if run is not None:
                run.error(number, line, kind=LAUNCHER)
            else:
                self._capture_error(number, line, kind=LAUNCHER)
            return
        if line.startswith("NCCL version"):
            self._nccl_version(line)
            return
        if line.startswith(("nThread", "Out of bounds", "Avg bus")):  # nccl-tests v1.0: no '#'
            self._hash("# " + line, number)
            return
        if run is not None and run.layout is not None and not run.trailer and _row_like(line):
            run.damaged(number, f"a line inside the table that is neither a data row nor known noise: {line.strip()}")
            return
        if "_perf" in line and (run is None or run.trailer):
            m = _COMMAND.search(line)
            if m:
                self.hint = m.group(1)
        if _ERROR_WORD.search(line.lower()) and _LAUNCHER_ERROR.search(line):
            self._capture_error(number, line)

    # -- helpers -----------------------------------------------------------------------------
    def _capture_error(self, number: int, line: str, host: str | None = None, kind: str | None = None) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(NcclError(number, line.strip(), host, kind))

    def _nccl_version(self, text: str) -> None:
        m = _NCCL_VERSION.search(text)
        if not m:
            return
        found = (m.group(1), m.group(2))
        run = self.run
        if run is not None and not run.complete:
            run.nccl_version = run.nccl_version or found[0]
            run.cuda_version = run.cuda_version or found[1]
        else:
            self.nccl = found
        self._refresh_want()

    def _open(self, number: int) -> ReportBuilder:
        self._close()
        self.recognised = True
        self.run = ReportBuilder(number, self.hint, self.nccl, self.sweeps)
        self.hint = None
        self.nccl = (None, None)
        self._refresh_want()
        return self.run

    def _close(self) -> None:
        if self.run is not None:
            self._lose_pending(self.run)
            run = self.run.finish(self.collective)
            self.statuses.append(run.status)
            self.content = self.content or bool(run.rows or run.ranks) or run.status == "failed"
            if self.sink is not None:
                self.sink(run)
            else:
                self.runs.append(run)
            self.run = None
            self._refresh_want()


_new = object.__new__
_SET_RANK, _SET_HOST, _SET_DEVICE, _SET_BUSID, _SET_GPU, _SET_PID = (
    getattr(NcclRank, name).__set__ for name in ("rank", "host", "device", "busid", "gpu", "pid")
)


def _rank(line: str) -> NcclRank | None:
    """A `#  Rank R [Group G] Pid P on HOST device D [BUSID] NAME` line; split first, regex as fallback."""
    parts = line.split(maxsplit=12)
    if len(parts) == 13 and parts[3] == "Group":
        _, _, rank, _, _, pid_kw, pid, on, host, device_kw, device, busid, gpu = parts
        if pid_kw == "Pid" and on == "on" and device_kw == "device" and busid[:1] == "[" and busid[-1:] == "]":
            try:
                number, device_number, pid_number = int(rank), int(device), int(pid)
            except ValueError:
                pass
            else:
                made: NcclRank = _new(NcclRank)  # NcclRank(...) filled through its slots, as layout's rows are
                _SET_RANK(made, number)
                _SET_HOST(made, host)
                _SET_DEVICE(made, device_number)
                _SET_BUSID(made, busid[1:-1])
                _SET_GPU(made, gpu.strip())
                _SET_PID(made, pid_number)
                return made
    m = _RANK.match(line)
    if m is None:
        return None
    return NcclRank(int(m.group(1)), m.group(4), int(m.group(5)), m.group(6), m.group(7), int(m.group(3)))
