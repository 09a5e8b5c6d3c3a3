"""`acceptance parse dcgm FILE [--exit-code N]`, and the reader of `dcgmi diag` captures.

The I/O side of `acceptance.tools.dcgm` (which never opens a file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from acceptance.tools import dcgm


def read_dcgm(path: str | Path) -> dcgm.DcgmReport:
    """Parse one capture of `dcgmi diag` (JSON or text) from a file, or standard input for `-`."""
    if str(path) == "-":
        return dcgm.parse(sys.stdin.read(), "<stdin>")
    path = Path(path)
    return dcgm.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))


def add_parse_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exit-code",
        type=int,
        metavar="N",
        help="dcgmi's exit status when known: anything but 0 makes the run a failure",
    )


def parse_cli(path: Path, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    report = read_dcgm(path)
    clean = report.status == dcgm.PASS and not report.incomplete
    exit_code = getattr(args, "exit_code", None)
    if exit_code is not None and not dcgm.interpret_exit(exit_code).passed:
        clean = False
    return report.to_json(), 0 if clean else 1
