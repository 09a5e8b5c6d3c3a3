"""DCGM diagnostics: the `dcgmi diag` command, its exit status, and its output (JSON or text).

The façade of `acceptance.tools.dcgm`. Pure: text in, records out (the caller reads the
file; `acceptance parse dcgm` lives in `acceptance.cmd.parse_dcgm`). `parse` recognises the JSON
of DCGM 2.x–4.x (`-j`) and the text tables of 2.x–4.x, and reports test names as DCGM 4.x
plugin ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.errors import ParseError, UsageError
from acceptance.tools.dcgm.findings import XID_MEANINGS, action, cause, codes, xid_of
from acceptance.tools.dcgm.json_report import parse_json
from acceptance.tools.dcgm.model import (
    ERROR,
    FAIL,
    PASS,
    SKIP,
    WARN,
    DcgmConditions,
    DcgmMessage,
    DcgmReport,
    DcgmTest,
    GpuDevice,
    ReportError,
)
from acceptance.tools.dcgm.names import (
    SEVERITY_ISOLATE,
    SEVERITY_NAMES,
    SEVERITY_NONE,
    SEVERITY_RESET,
    SOFTWARE,
    normalize_test_name,
)
from acceptance.tools.dcgm.text import _ERROR_LINE, looks_like_table_row, parse_text

__all__ = [
    "ERROR",
    "FAIL",
    "PASS",
    "SEVERITY_ISOLATE",
    "SEVERITY_NAMES",
    "SEVERITY_NONE",
    "SEVERITY_RESET",
    "SKIP",
    "SOFTWARE",
    "WARN",
    "XID_MEANINGS",
    "DcgmConditions",
    "DcgmDiag",
    "DcgmMessage",
    "DcgmReport",
    "DcgmTest",
    "ExitMeaning",
    "GpuDevice",
    "ReportError",
    "action",
    "cause",
    "codes",
    "interpret_exit",
    "normalize_test_name",
    "parse",
    "xid_of",
]

_LEVEL_ALIASES = {"short": 1, "quick": 1, "medium": 2, "long": 3, "xlong": 4}
_PARAMETER = re.compile(r"^[A-Za-z0-9_ ]+\.[A-Za-z0-9_]+=.*$")


@dataclass(frozen=True)
class DcgmDiag:
    """One `dcgmi diag` invocation.

    `timeout_s` is the run's deadline, enforced by whoever runs the command (the Job's
    `activeDeadlineSeconds`, the SSH channel); it is not a dcgmi flag because older
    releases do not have one.
    """

    level: int = 3
    gpus: tuple[int, ...] | None = None
    iterations: int = 1
    parameters: tuple[str, ...] = ()
    host: str | None = None
    json: bool = True
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.level not in (1, 2, 3, 4):
            raise UsageError(f"dcgmi diag level must be 1, 2, 3 or 4, not {self.level!r}")
        if self.iterations < 1:
            raise UsageError(f"dcgmi diag iterations must be at least 1, not {self.iterations!r}")
        if self.gpus is not None and (not self.gpus or any(g < 0 for g in self.gpus)):
            raise UsageError(f"GPU ids must be a non-empty list of indexes >= 0, not {self.gpus!r}")
        for p in self.parameters:
            if not _PARAMETER.match(p):
                raise UsageError(f"dcgmi diag parameter {p!r}: expected test_name.attr_name=attr_value")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise UsageError(f"a dcgmi diag deadline must be positive, not {self.timeout_s!r} s")

    def argv(self) -> list[str]:
        args = ["dcgmi", "diag", "-r", str(self.level)]
        if self.gpus is not None:
            args += ["-i", ",".join(str(g) for g in self.gpus)]
        if self.iterations > 1:
            args += ["--iterations", str(self.iterations)]
        if self.parameters:
            args += ["-p", ";".join(self.parameters)]
        if self.host:
            args += ["--host", self.host]
        if self.json:
            args.append("-j")
        return args

    def progress_note(self) -> str:
        """What a progress line can say of the tests finished while this command runs."""
        if self.json:  # one JSON document, printed when every test has run
            return "tests finished: known at its end (dcgmi diag -j prints them all then)"
        return ""

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> DcgmDiag:
        """Read back a `dcgmi diag` command line (as written by `argv()` or by hand)."""
        args = list(argv)
        if args[:1] and Path(args[0]).name == "dcgmi":
            args = args[1:]
        if args[:1] == ["diag"]:
            args = args[1:]
        values: dict[str, Any] = {"json": False, "parameters": []}
        it = iter(args)
        for arg in it:
            option, eq, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")

            def value(option: str = option, eq: str = eq, inline: str = inline) -> str:
                if eq:
                    return inline
                nxt = next(it, None)
                if nxt is None:
                    raise UsageError(f"dcgmi diag option {option} needs a value")
                return nxt

            if option in ("-r", "--run"):
                values["level"] = _level(value())
            elif option in ("-i", "--entity-id", "-g", "--gpuList"):
                values["gpus"] = tuple(int(g) for g in value().split(",") if g.strip())
            elif option == "--iterations":
                values["iterations"] = int(value())
            elif option in ("-p", "--parameters"):
                values["parameters"] += [p for p in value().split(";") if p]
            elif option == "--host":
                values["host"] = value()
            elif option in ("-j", "--json"):
                values["json"] = True
            elif option == "--timeout":
                values["timeout_s"] = float(value())
            else:
                raise UsageError(f"dcgmi diag option {arg!r} is not one this harness builds")
        if "level" not in values:
            raise UsageError("dcgmi diag command line without -r LEVEL")
        values["parameters"] = tuple(values["parameters"])
        return cls(**values)


def _level(text: str) -> int:
    if text in _LEVEL_ALIASES:
        return _LEVEL_ALIASES[text]
    if text.isdigit():
        return int(text)
    raise UsageError(f"dcgmi diag -r {text!r}: only the levels 1-4 are supported")


@dataclass(frozen=True)
class ExitMeaning:
    """What dcgmi's exit status says (the DCGM return code cast to 8 bits)."""

    code: int
    ran: bool  # the diagnostic ran to its end (whatever it found)
    passed: bool
    isolate: bool  # DCGM_ST_NVVS_ISOLATE_ERROR: a failure whose code says isolate the GPU
    meaning: str


def interpret_exit(code: int) -> ExitMeaning:
    """0 passed; 226 ran and something failed; 205 a GPU must be isolated; anything else: did not run."""
    byte = code % 256
    if byte == 0:
        return ExitMeaning(code, True, True, False, "the diagnostic passed")
    if byte == 226:
        return ExitMeaning(code, True, False, False, "the diagnostic ran and something failed (DCGM_ST_NVVS_ERROR)")
    if byte == 205:
        return ExitMeaning(
            code,
            True,
            False,
            True,
            "the diagnostic failed and a GPU must be isolated (DCGM_ST_NVVS_ISOLATE_ERROR)",
        )
    if byte == 203:
        return ExitMeaning(code, False, False, False, "the diagnostic was killed before it finished (exit 203)")
    return ExitMeaning(code, False, False, False, f"the diagnostic did not run (dcgmi exit status {code})")


def parse(text: str, source: str = "<text>") -> DcgmReport:
    """Parse one capture of `dcgmi diag` (JSON or text, noise lines around it tolerated).

    A UTF-8 byte order mark at the start (a capture saved by an editor, or read as utf-8
    rather than utf-8-sig) is not part of the output.
    """
    text = _without_timestamps(text.removeprefix("\ufeff"))
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("{"):
            return parse_json(text, offset + line.index("{"), source)
        if looks_like_table_row(line) or _ERROR_LINE.match(stripped):
            return parse_text(text, source)
        offset += len(line)
    raise ParseError(source, 0, "", "dcgmi diag output: JSON from -j, a result table, or an 'Error:' line")


_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) ", re.MULTILINE)


def _without_timestamps(text: str) -> str:
    """Drop the RFC 3339 prefix `kubectl logs --timestamps` puts on every line, when the capture has it."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return _TIMESTAMP.sub("", text) if _TIMESTAMP.match(first) else text
