"""Streaming parser of nccl-tests text output (every generation, 2.0 … 2.19), per FORMATS §1.

One pass over lines, memory bounded by the parsed rows and ranks. Only the root
process prints the report; everything else (NCCL INFO/WARN, launcher, ssh, UCX)
is foreign and may sit anywhere, even between rows. Launcher tags
(`[1,0]<stdout>:`, `0: `, kubectl's RFC 3339 times) are stripped first. Reports start at
`# nccl-tests version`, `# Collective test starting` or `# nThread`, whichever the
version prints first; a report is complete after its trailer (and, when it said
"starting", after "concluded"). A capture is never `ok` unless every report in it
is complete and clean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from acceptance.tools.nccl.layout import UNIFIED_PREAMBLE_WIDTH, Layout, layout_from_header
from acceptance.tools.nccl.names import normalize_collective
from acceptance.tools.nccl.records import NcclCapture, NcclError, NcclRank, NcclRun, capture_status
from acceptance.tools.nccl.report import MAX_ERRORS, ReportBuilder

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
_VERSION = re.compile(r"# nccl-tests version (\S+)(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?")
_STARTING = re.compile(r"# Collective test starting: (\S+)")
_OOB = re.compile(r"#?\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG = re.compile(r"#?\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_BITWISE = re.compile(r"# Bitwise mismatches\s*:\s*(\d+)")
_REDUCING = re.compile(r"# Reducing maxBytes to (\d+)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)(?:\S*?\+cuda(\d+\.\d+))?")
_FAILURE = re.compile(r"(\S+): Test (?:NCCL|CUDA) failure |\s*\.\. (\S+) pid \d+: Test failure |(\S+): Test timeout \(")
_ROW_START = re.compile(r"\s*\d+\s+\d+\s+[A-Za-z]")
_LAUNCHER_ERROR = re.compile(
    r"(?i)\b(?:failed|failure|error|invalid|abort(?:ed)?|killed|terminated|segmentation fault|"
    r"core dumped|exited with non-zero|exit code)\b"
)
_COMMAND = re.compile(r"(?:^|[\s/])([a-z][a-z_]*?_perf(?:_mpi)?)(?=\s|$)")


class TextParser:
    """Feed lines with `feed`, then call `finish` once."""

    def __init__(self, source: str = "<text>", collective: str | None = None) -> None:
        self.source = source
        self.collective = normalize_collective(collective) if collective else None
        self.run: ReportBuilder | None = None
        self.runs: list[NcclRun] = []
        self.errors: list[NcclError] = []
        self.failed = False
        self.hint: str | None = None
        self.nccl: tuple[str | None, str | None] = (None, None)

    # -- driving ---------------------------------------------------------------------------
    def feed(self, lines: Iterable[str], first_line: int = 1) -> None:
        dispatch = self._dispatch
        glued = _MAYBE_GLUED
        for number, raw in enumerate(lines, first_line):
            at = raw.find(" NCCL INFO ")
            if at >= 0:
                if raw.startswith("NCCL version", at + 11):
                    self._nccl_version(raw)
                if raw[0] not in glued:
                    continue
            dispatch(raw.rstrip("\r\n"), number)

    def finish(self) -> NcclCapture:
        self._close()
        runs = tuple(self.runs)
        errors = tuple(self.errors)
        return NcclCapture(capture_status(runs, errors, self.failed), runs, errors, self.source)

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
            return
        if line.startswith("# nThread") or line.startswith("#nThread"):
            self._nthread(line, number)
            return
        if run is None:
            return
        if run.layout is None or run.trailer:
            names = line[1:].split()
            if names[:2] == ["size", "count"]:
                run.layout = layout_from_header(names)
                if run.layout is None:
                    raise _error(
                        self.source,
                        number,
                        line,
                        "a column header naming size count type "
                        "[redop] [root] and two halves of time algbw busbw #wrong",
                    )
                return
        if line.startswith("# Out of bounds") or line.startswith("# Avg bus") or line.startswith("# Bitwise"):
            self._trailer(line, number)
        elif line.startswith("# Collective test concluded"):
            run.concluded = True
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

    def _nthread(self, line: str, number: int) -> None:
        run = self.run
        if run is None or run.header:
            run = self._open(number)
        m = _NTHREAD.match(line)
        if not m:
            raise _error(
                self.source,
                number,
                line,
                "'# nThread T nGpus G minBytes N maxBytes N step: S(factor|bytes)"
                " warmup iters: W iters: N … validation: C'",
            )
        run.header = True
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
                raise _error(self.source, number, line, "'# Avg bus bandwidth : <number>'") from None
            run.trailer = True
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
            if _ROW_START.match(line):
                self._row(run, run.layout, line, number)
                return
            tokens = line.split()
            if run.pending is not None:
                joined = run.layout.join(run.pending[0], tokens, run.pending[1])
                if joined is not None:
                    run.rows.append(joined)
                    run.pending = None
                    return
            elif len(tokens) == run.layout.need and run.layout.halves(tokens) is not None:
                run.malformed = True
                run.error(number, f"numbers of a data row whose size was lost: {line.strip()}")
                return
        if line.lstrip().startswith(".. "):
            self._foreign(line, number)
            return
        m = _PREFIX.match(line)
        if m and line[0].isdigit():
            self._dispatch(line[m.end() :], number)
            return
        self._foreign(line, number)

    def _row(self, run: ReportBuilder, layout: Layout, line: str, number: int) -> None:
        tokens = line.split()
        row = layout.row(tokens, number)
        if row is not None:
            run.rows.append(row)
            run.pending = None
            if "redop" in layout.keys and row.redop is None:
                run.blank_redop = True
            return
        pre = layout.preamble(tokens)
        if pre is None and layout.unified and len(line) > UNIFIED_PREAMBLE_WIDTH:
            # NCCL output glued to a row whose numbers had not been printed yet
            pre = layout.preamble(line[:UNIFIED_PREAMBLE_WIDTH].split())
            if pre is not None:
                self._foreign(line[UNIFIED_PREAMBLE_WIDTH:], number)
        if pre is not None:
            run.pending = (pre, number)
            return
        run.malformed = True
        run.error(
            number,
            f"unreadable data row (expected {' '.join(layout.keys)} then 2 x {' '.join(layout.half)}): {line.strip()}",
        )

    def _foreign(self, line: str, number: int) -> None:
        if " NCCL INFO " in line:
            return
        run = self.run
        if "Test " in line and _FAILURE.match(line):
            if run is not None:
                run.error(number, line, failed=True)
            else:
                self.failed = True
                self._capture_error(number, line)
            return
        if " NCCL WARN " in line:
            if run is not None:
                run.error(number, line)
            else:
                self._capture_error(number, line)
            return
        if line.startswith("NCCL version"):
            self._nccl_version(line)
            return
        if line.startswith(("nThread", "Out of bounds", "Avg bus")):  # nccl-tests v1.0: no '#'
            self._hash("# " + line, number)
            return
        if "_perf" in line and (run is None or run.trailer):
            m = _COMMAND.search(line)
            if m:
                self.hint = m.group(1)
        if _LAUNCHER_ERROR.search(line):
            self._capture_error(number, line)

    # -- helpers -----------------------------------------------------------------------------
    def _capture_error(self, number: int, line: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(NcclError(number, line.strip()))

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

    def _open(self, number: int) -> ReportBuilder:
        self._close()
        self.run = ReportBuilder(number, self.hint, self.nccl)
        self.hint = None
        self.nccl = (None, None)
        return self.run

    def _close(self) -> None:
        if self.run is not None:
            if self.run.pending is not None:
                self.run.malformed = True
                self.run.error(self.run.pending[1], "data row cut short (its numbers never came)")
            self.runs.append(self.run.finish(self.collective))
            self.run = None


def _rank(line: str) -> NcclRank | None:
    """A `#  Rank R [Group G] Pid P on HOST device D [BUSID] NAME` line; split first, regex as fallback."""
    parts = line.split(maxsplit=12)
    if len(parts) == 13 and parts[3] == "Group":
        _, _, rank, _, _, pid_kw, pid, on, host, device_kw, device, busid, gpu = parts
        if pid_kw == "Pid" and on == "on" and device_kw == "device" and busid[:1] == "[" and busid[-1:] == "]":
            try:
                return NcclRank(int(rank), host, int(device), busid[1:-1], gpu.strip(), int(pid))
            except ValueError:
                pass
    m = _RANK.match(line)
    if m is None:
        return None
    return NcclRank(int(m.group(1)), m.group(4), int(m.group(5)), m.group(6), m.group(7), int(m.group(3)))


def _error(source: str, line: int, text: str, expected: str) -> Exception:
    from acceptance.errors import ParseError

    return ParseError(source, line, text, expected)
