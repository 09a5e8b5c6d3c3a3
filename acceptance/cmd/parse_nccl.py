"""`acceptance parse nccl FILE [--collective NAME]`, and the reader of nccl-tests captures.

The I/O side of `acceptance.tools.nccl` (which never opens a file). The JSON goes out as the
runs are read: each finished run is encoded into a spool (memory up to `SPOOL_BYTES`, a
temporary file beyond), so a capture of a thousand 2,160-rank reports takes the memory of one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TextIO

from acceptance.cmd.jsonout import pretty
from acceptance.errors import ParseError
from acceptance.tools import nccl

SPOOL_BYTES = 32 << 20
_INLINE = 4  # document > runs > run > rows > one row per line


def read_nccl(
    path: str | Path, collective: str | None = None, sink: Callable[[nccl.NcclRun], None] | None = None
) -> nccl.NcclCapture:
    """Parse an nccl-tests capture (text or `-J` JSON) from a file, or standard input for `-`."""
    if str(path) == "-":
        return nccl.parse(sys.stdin, "<stdin>", collective, sink)
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        return nccl.parse(handle, str(path), collective, sink)


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


def _unrecognised(capture: nccl.NcclCapture) -> ParseError:
    said = f"; it holds only: {capture.errors[0]}" if capture.errors else ""
    return ParseError(
        capture.source,
        0,
        "",
        "nccl-tests output (a '# nThread …' header, a -J JSON document, or NCCL/launcher failure lines)" + said,
    )


def parse_cli(path: Path, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Exit 0: clean run; 1: a run failed or is incomplete, or the run died before its header
    (failure lines only); ParseError (exit 2): nothing of nccl-tests, NCCL or a known launcher."""
    capture = read_nccl(path, getattr(args, "collective", None))
    if not capture.runs and not capture.recognised:
        raise _unrecognised(capture)
    return capture.to_json(), 0 if capture.status == "ok" else 1


def write_cli(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    """`parse_cli` streamed: the document is written as runs finish, memory stays flat."""
    spool = _Spool()
    count = 0

    def sink(run: nccl.NcclRun) -> None:
        nonlocal count
        spool.write((",\n    " if count else "\n    ") + pretty(run.to_json(rows_as_text=True), _INLINE, 2))
        count += 1

    try:
        capture = read_nccl(path, getattr(args, "collective", None), sink)
        if not count and not capture.recognised:
            raise _unrecognised(capture)
        head = '{\n  "kind": "nccl-tests",\n  "status": "' + capture.status + '",\n  "runs": ['
        errors = pretty([e.to_json() for e in capture.errors], 2, 1)
        spool.copy_to(out, head, ("\n  ]" if count else "]") + ',\n  "errors": ' + errors + "\n}\n")
        out.flush()
    finally:
        spool.close()
    return 0 if capture.status == "ok" else 1


class _Spool:
    """The runs' JSON as it is made: in memory up to `SPOOL_BYTES`, in a temporary file beyond (what
    `tempfile.SpooledTemporaryFile` does, without loading `tempfile` for the captures that never need it)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.held = 0
        self.file: IO[str] | None = None

    def write(self, text: str) -> None:
        if self.file is not None:
            self.file.write(text)
            return
        self.parts.append(text)
        self.held += len(text)
        if self.held > SPOOL_BYTES:
            import tempfile

            self.file = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115 (closed by `close`)
            self.file.writelines(self.parts)
            self.parts = []

    def copy_to(self, out: TextIO, head: str, tail: str) -> None:
        """`head`, everything written, `tail`: one write when it was held in memory."""
        if self.file is None:
            out.write(head + "".join(self.parts) + tail)
            return
        import shutil

        out.write(head)
        self.file.seek(0)
        shutil.copyfileobj(self.file, out, 1 << 20)
        out.write(tail)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
