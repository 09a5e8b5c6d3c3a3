"""`acceptance parse nccl FILE [--collective NAME]`, and the reader of nccl-tests captures.

The I/O side of `acceptance.tools.nccl` (which never opens a file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools import nccl


def read_nccl(path: str | Path, collective: str | None = None) -> nccl.NcclCapture:
    """Parse an nccl-tests capture (text or `-J` JSON) from a file, or standard input for `-`."""
    if str(path) == "-":
        return nccl.parse(sys.stdin, "<stdin>", collective)
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return nccl.parse(handle, str(path), collective)


def _collective_arg(text: str) -> str:
    name = nccl.normalize_collective(text)
    if name not in nccl.COLLECTIVES:
        raise argparse.ArgumentTypeError(f"{text!r}: expected one of {', '.join(nccl.COLLECTIVES)}")
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
    capture = read_nccl(path, getattr(args, "collective", None))
    if not capture.runs:
        said = f"; it holds only: {capture.errors[0]}" if capture.errors else ""
        raise ParseError(
            capture.source, 0, "", f"nccl-tests output (a '# nThread …' header or a -J JSON document){said}"
        )
    return capture.to_json(), 0 if capture.status == "ok" else 1
