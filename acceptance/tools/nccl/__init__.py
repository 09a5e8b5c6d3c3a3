"""nccl-tests: command builder, parser of its text and `-J` JSON output, run conditions.

The façade of `acceptance.tools.nccl`: `parse`, `parse_text`, the records, `NcclTest`,
`NcclConditions` and the names (collectives, types, ops). Pure: text in, records out; the
caller opens files (`acceptance parse nccl` lives in `acceptance.cmd.parse_nccl`). The command
builder and the conditions load when first named, so that parsing alone starts quickly.
"""

from __future__ import annotations

import importlib
import io
import itertools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from acceptance.tools.nccl.names import (
    COLLECTIVES,
    REDOPS,
    TYPE_SIZES,
    collective_of,
    fmt_bytes,
    normalize_collective,
)
from acceptance.tools.nccl.records import (
    NcclCapture,
    NcclError,
    NcclHalf,
    NcclRank,
    NcclRow,
    NcclRun,
    first_failure,
)
from acceptance.tools.nccl.text import TextParser

if TYPE_CHECKING:
    from acceptance.tools.nccl.command import OPTIONS, NcclTest, parse_size
    from acceptance.tools.nccl.conditions import NcclConditions

_LAZY = {
    "OPTIONS": "acceptance.tools.nccl.command",
    "NcclTest": "acceptance.tools.nccl.command",
    "parse_size": "acceptance.tools.nccl.command",
    "NcclConditions": "acceptance.tools.nccl.conditions",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COLLECTIVES",
    "OPTIONS",
    "REDOPS",
    "TYPE_SIZES",
    "NcclCapture",
    "NcclConditions",
    "NcclError",
    "NcclHalf",
    "NcclRank",
    "NcclRow",
    "NcclRun",
    "NcclTest",
    "collective_of",
    "first_failure",
    "fmt_bytes",
    "normalize_collective",
    "parse",
    "parse_size",
    "parse_text",
]


def parse(
    lines: Iterable[str],
    source: str = "<text>",
    collective: str | None = None,
    sink: Callable[[NcclRun], None] | None = None,
) -> NcclCapture:
    """Parse a capture line by line (text, or nccl-tests' `-J` JSON document).

    `collective` names the collective for reports that do not name it themselves. With a
    `sink`, each run is handed to it as soon as its report ends and the capture returned holds
    no runs (its status and errors still cover them): memory stays that of one report.
    Raises ParseError only for input whose only nccl-tests content is a header line that does
    not have its documented shape, or a JSON document that is not nccl-tests' report.
    """
    it = iter(lines)
    head: list[str] = []
    for line in it:
        head.append(line)
        if line.strip():
            break
    if head and head[-1].lstrip().startswith("{"):
        from acceptance.tools.nccl.json_report import parse_json_report  # loaded for JSON documents only

        capture = parse_json_report("".join(itertools.chain(head, it)), source, collective)
        if sink is None:
            return capture
        for run in capture.runs:
            sink(run)
        return NcclCapture(capture.status, (), capture.errors, capture.source, capture.recognised)
    parser = TextParser(source, collective, sink)
    parser.feed(itertools.chain(head, it))
    return parser.finish()


def parse_text(text: str, source: str = "<text>", collective: str | None = None) -> NcclCapture:
    return parse(io.StringIO(text), source, collective)
