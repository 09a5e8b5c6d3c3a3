"""The text table `dcgmi diag` prints without `-j` (the boxed table of DCGM 2.x to 4.x).

Rows are fixed-width: ``| `` + name (25) + `` | `` + value (46) + `` |``; messages are
cut every 45 characters regardless of words and continue on rows with an empty
name, so chunks are re-joined without adding spaces. 2.x/3.x print per-GPU verdict
lists (``Pass - GPUs: 1, 2`` / ``Fail - GPU: 0``) under Title Case names; 4.x prints
an overall row under the plugin id and one ``GPU0: Pass`` row per entity.

Other `dcgmi` commands draw boxes too (`dcgmi stats`, `dcgmi health`, `dcgmi discovery` in the
same job log): a box is read as a diagnostic table only once it shows the diagnostic's header,
a section rule or a verdict; any other box is skipped, and never makes a complete diagnostic
table look cut short.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from acceptance.errors import ParseError
from acceptance.tools.dcgm.assemble import build_report, merge_tests, worst_of_checks
from acceptance.tools.dcgm.model import (
    FAIL,
    PASS,
    SKIP,
    WARN,
    DcgmMessage,
    DcgmReport,
    DcgmTest,
    GpuDevice,
    ReportError,
)
from acceptance.tools.dcgm.names import SOFTWARE_CHECKS, category_of, gpu_in_message, normalize_test_name

_STATUS = {"Pass": PASS, "Fail": FAIL, "Skip": SKIP, "Warn": WARN, "": SKIP}
_BORDER = re.compile(r"^\+[-=]{20,}\+[-=]{20,}\+$")
_SECTION = re.compile(r"^[|+]-{3,}\s+(\w+)\s+-+\+-+[|+]$")
_HEADER = re.compile(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|$")
_LIST = re.compile(r"^(Pass|Fail|Warn|Skip) - (?:(All)|GPUs?: (\d+(?:, ?\d+)*) *)$")
_ENTITY = re.compile(r"^([A-Za-z_]+?)(\d+):(?: (Pass|Fail|Warn|Skip))?$")  # "" = not run
_MSG_NAME = re.compile(r"^(Warning|Info|Error)(?:: ([A-Za-z_]+?)(\d+))?$")
_CODE = re.compile(r"^Code: \(\d+\)$")
_ERROR_LINE = re.compile(r"^(Error: .*|Aborting the iterative runs of the diagnostic due to failure: .*)$")
# `kubectl logs --timestamps` prefixes every line with an RFC 3339 time
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ")
EXPECTED_ROW = 'a test verdict ("Pass", "Fail - All", "Pass - GPUs: 1, 2", "GPU0: Pass" ...)'


def looks_like_table_row(line: str) -> bool:
    line = _TIMESTAMP.sub("", line).strip()
    return bool(_split(line)) or bool(_HEADER.match(line))


@dataclass
class _Test:
    shown: str
    section: str
    line: int
    status: str | None = None
    all_gpus: bool = False
    gpus: dict[int, str] = field(default_factory=dict)
    entities: dict[str, str] = field(default_factory=dict)  # rows of entities other than GPUs: CPU0, ...
    messages: list[DcgmMessage] = field(default_factory=list)

    def finish(self, known_gpus: list[int]) -> DcgmTest:
        name = normalize_test_name(self.shown)
        gpus = dict(self.gpus)
        entities = dict(self.entities)
        if self.all_gpus and self.status is not None:  # a GPU's own row ("Fail - GPU: 0") beats "... - All"
            gpus = {g: self.status for g in known_gpus} | gpus
        status = self.status
        if status is None:
            status = worst_of_checks([*gpus.values(), *entities.values()]) if gpus or entities else SKIP
        elif status == WARN:  # 4.x entity rows cannot print "Warn": they print "Fail" under a "Warn" test
            gpus = {g: WARN if s == FAIL else s for g, s in gpus.items()}
            entities = {e: WARN if s == FAIL else s for e, s in entities.items()}
        messages = list(self.messages)
        if self.shown in SOFTWARE_CHECKS:
            messages = [_prefixed(m, self.shown) for m in messages]
            if status == FAIL and not messages:
                messages.append(DcgmMessage("error", f"{self.shown}: Fail"))
        return DcgmTest(name, category_of(name, self.section), status, gpus, tuple(messages), entities=entities)


@dataclass
class _Msg:
    kind: str
    entity: str | None
    chunks: list[str]


@dataclass
class _Table:
    start: int
    closed: bool = False
    section: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    tests: list[_Test] = field(default_factory=list)
    msg: _Msg | None = None
    last_meta: str | None = None
    explicit_gpus: set[int] = field(default_factory=set)
    orphans: int = 0
    known: bool = False  # the diagnostic's header, a section rule or a verdict row was seen
    foreign: bool = False  # a box of another dcgmi command: its rows are skipped

    def end_message(self) -> None:
        if self.msg is None:
            return
        text = "".join(self.msg.chunks).strip()
        entity = self.msg.entity
        gpu = int(entity[3:]) if entity and entity.startswith("GPU") else gpu_in_message(text)
        if text and self.tests:
            self.tests[-1].messages.append(DcgmMessage(self.msg.kind, text, gpu, entity))
        self.msg = None


def parse_text(text: str, source: str) -> DcgmReport:
    """Parse every result table and error line in a text capture (noise lines are ignored)."""
    tables: list[_Table] = []
    errors: list[ReportError] = []
    aborted = False
    table: _Table | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _TIMESTAMP.sub("", raw).strip()
        stripped = line.strip()
        if _BORDER.match(stripped):
            if table is not None and (table.tests or table.metadata or table.section):
                table.end_message()
                table.closed = True
                table = None
            elif table is None:
                table = _Table(number)
                tables.append(table)
            continue
        section = _SECTION.match(stripped)
        if section or _HEADER.match(stripped):
            if table is None or table.foreign:
                table = _Table(number)
                tables.append(table)
            table.known = True
            if section:
                table.end_message()
                table.section = section.group(1)
            continue
        cells = _split(line)
        if cells is not None:
            if table is None:
                table = _Table(number)
                tables.append(table)
            if not table.known and not _verdict_row(cells):
                table.foreign = True
            if not table.foreign:
                table.known = True
                _row(table, cells, number, line, source)
            continue
        if _ERROR_LINE.match(stripped):
            errors.append(ReportError(number, stripped))
            aborted = aborted or stripped.startswith("Aborting")
    if table is not None:
        table.end_message()
    tables = [t for t in tables if t.known and not t.foreign]
    if not tables and not errors:
        raise ParseError(source, 0, "", "dcgmi diag output: a result table or an 'Error:' line")
    return _assemble(tables, errors, aborted)


def _split(line: str) -> tuple[str, str, str] | None:
    """(name, raw 45-char chunk, full value) of a table row, or None for any other line."""
    if len(line) < 30 or line[0] != "|" or line[28] != "|" or line[1] != " " or line[29] != " ":
        return None
    if _SECTION.match(line) or _HEADER.match(line):
        return None
    value = line[30:]
    if value.endswith("|"):
        value = value[:-1]
    return line[2:27].strip(), line[30:75], value.strip()


def _verdict_row(cells: tuple[str, str, str]) -> bool:
    """Whether a row can only belong to a diagnostic table: a verdict, or a message row of one."""
    name, _, value = cells
    if value in _STATUS and value:
        return True
    if _LIST.match(value) or _ENTITY.match(value):
        return True
    return bool(name) and bool(_MSG_NAME.match(name))


def _row(table: _Table, cells: tuple[str, str, str], number: int, line: str, source: str) -> None:
    name, chunk, value = cells
    if table.section == "Metadata":
        if name:
            table.metadata[name] = value
            table.last_meta = name
        elif table.last_meta:
            table.metadata[table.last_meta] += value
        return
    current = table.tests[-1] if table.tests else None
    if not name:
        listed = _LIST.match(value)
        entity = _ENTITY.match(value)
        if current is not None and listed:
            table.end_message()
            _apply_list(table, current, listed)
        elif current is not None and entity:
            table.end_message()
            ident = int(entity.group(2))
            if entity.group(1) == "GPU":
                current.gpus[ident] = _STATUS[entity.group(3) or ""]
                table.explicit_gpus.add(ident)
            else:
                current.entities[f"{entity.group(1)}{ident}"] = _STATUS[entity.group(3) or ""]
        elif current is not None and _CODE.match(value):  # 3.x "Warn - All" Diagnostic return code
            table.end_message()
            current.messages.append(DcgmMessage("info", value))
        elif table.msg is not None:
            table.msg.chunks.append(chunk)
        return
    table.end_message()
    msg_name = _MSG_NAME.match(name)
    if msg_name:
        if current is None:  # a fragment that starts below its test row
            table.orphans += 1
            table.tests.append(
                _Test("software" if table.section == "Deployment" else "unknown", table.section, number, FAIL)
            )
        who = f"{msg_name.group(2)}{msg_name.group(3)}" if msg_name.group(2) else None
        table.msg = _Msg(msg_name.group(1).lower(), who, [chunk])
        return
    test = _Test(name, table.section, number)
    listed = _LIST.match(value)
    if value in _STATUS:
        test.status = _STATUS[value]
    elif listed:
        _apply_list(table, test, listed)
    else:
        raise ParseError(source, number, line.strip(), EXPECTED_ROW)
    table.tests.append(test)


def _apply_list(table: _Table, test: _Test, listed: re.Match[str]) -> None:
    status = _STATUS[listed.group(1)]
    if listed.group(2):
        test.status = status
        test.all_gpus = True
        return
    for token in listed.group(3).split(","):
        test.gpus[int(token)] = status
        table.explicit_gpus.add(int(token))


def _assemble(tables: list[_Table], errors: list[ReportError], aborted: bool) -> DcgmReport:
    reports = [_table_report(t) for t in tables]
    if any(not t.closed for t in tables):
        cut = next(t for t in tables if not t.closed)
        errors.append(ReportError(cut.start, "the result table ends without its closing border: output cut short"))
    if any(t.orphans for t in tables):
        errors.append(ReportError(None, "a message row with no test row above it: the table is a fragment"))
    unique = [r for i, r in enumerate(reports) if r not in reports[:i]]
    tests = merge_tests(t for r in unique for t in r.tests)
    first = unique[0] if unique else None
    devices = {g: d for r in unique for g, d in r.devices.items()}
    return build_report(
        "text",
        tests,
        errors=errors,
        dcgm_version=first.dcgm_version if first else None,
        driver_version=first.driver_version if first else None,
        devices=devices,
        failed=aborted,
    )


def _table_report(table: _Table) -> DcgmReport:
    device_ids = _device_ids(table.metadata)
    known = sorted(table.explicit_gpus) or list(range(len(device_ids)))
    built = [t.finish(known) for t in table.tests]
    software = merge_tests((t for t in built if t.name == "software"), combine=worst_of_checks)
    others = merge_tests(t for t in built if t.name != "software")
    devices = {i: GpuDevice(device_id=d) for i, d in enumerate(device_ids)}
    return build_report(
        "text",
        software + others,
        dcgm_version=table.metadata.get("DCGM Version") or None,
        driver_version=table.metadata.get("Driver Version Detected") or None,
        devices=devices,
    )


def _device_ids(metadata: dict[str, str]) -> list[str]:
    value = metadata.get("GPU Device IDs Detected", "")
    return [v.strip() for v in value.split(",") if v.strip()]


def _prefixed(message: DcgmMessage, check: str) -> DcgmMessage:
    return DcgmMessage(
        message.kind,
        f"{check}: {message.text}",
        message.gpu,
        message.entity,
        message.error_id,
        message.error_category,
        message.error_severity,
    )
