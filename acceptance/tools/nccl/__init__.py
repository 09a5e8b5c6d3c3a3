"""nccl-tests: command builder, parser of its text and `-J` JSON output, run conditions.

The façade of `acceptance.tools.nccl`: `parse`, `parse_text`, `parse_file`, the records, `NcclTest`,
`NcclConditions`, and the hooks of `acceptance parse nccl`.
"""

from __future__ import annotations

import argparse
import io
import itertools
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.nccl.command import NcclTest, parse_size
from acceptance.tools.nccl.conditions import NcclConditions
from acceptance.tools.nccl.json_report import parse_json_report
from acceptance.tools.nccl.names import COLLECTIVES, collective_of, fmt_bytes, normalize_collective
from acceptance.tools.nccl.records import NcclCapture, NcclError, NcclHalf, NcclRank, NcclRow, NcclRun
from acceptance.tools.nccl.text import TextParser

__all__ = [
    "COLLECTIVES",
    "NcclCapture",
    "NcclConditions",
    "NcclError",
    "NcclHalf",
    "NcclRank",
    "NcclRow",
    "NcclRun",
    "NcclTest",
    "add_parse_options",
    "collective_of",
    "fmt_bytes",
    "parse",
    "parse_cli",
    "parse_file",
    "parse_size",
    "parse_text",
]


def parse(lines: Iterable[str], source: str = "<text>", collective: str | None = None) -> NcclCapture:
    """Parse a capture line by line (text, or nccl-tests' `-J` JSON document).

    `collective` names the collective for reports that do not name it themselves.
    Raises ParseError only for nccl-tests lines that do not have their documented shape.
    """
    it = iter(lines)
    head: list[str] = []
    for line in it:
        head.append(line)
        if line.strip():
            break
    if head and head[-1].lstrip().startswith("{"):
        return parse_json_report("".join(itertools.chain(head, it)), source, collective)
    parser = TextParser(source, collective)
    parser.feed(itertools.chain(head, it))
    return parser.finish()


def parse_text(text: str, source: str = "<text>", collective: str | None = None) -> NcclCapture:
    return parse(io.StringIO(text), source, collective)


def parse_file(path: str | Path, collective: str | None = None) -> NcclCapture:
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return parse(handle, str(path), collective)


# -- `acceptance parse nccl FILE [--collective NAME]` -------------------------------------------


def _collective_arg(text: str) -> str:
    name = normalize_collective(text)
    if name not in COLLECTIVES:
        raise argparse.ArgumentTypeError(f"{text!r}: expected one of {', '.join(COLLECTIVES)}")
    return name


def add_parse_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collective",
        type=_collective_arg,
        metavar="NAME",
        help="the collective, for old outputs that do not name it (e.g. all_reduce)",
    )


def parse_cli(path: Path, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Exit 0: clean run; 1: a run failed or is incomplete; ParseError (exit 2): no nccl-tests output."""
    collective = getattr(args, "collective", None)
    stdin = str(path) == "-"
    capture = parse(sys.stdin, "<stdin>", collective) if stdin else parse_file(path, collective)
    if not capture.runs:
        said = f"; it holds only: {capture.errors[0]}" if capture.errors else ""
        raise ParseError(
            capture.source, 0, "", f"nccl-tests output (a '# nThread …' header or a -J JSON document){said}"
        )
    return capture.to_json(), 0 if capture.status == "ok" else 1
