"""`acceptance parse trainlog FILE [--format F] [--column NAME=FIELD]...`, and the reader of
training logs (also used by `acceptance analyze`).

The I/O side of `acceptance.tools.trainlog` (which never opens a file): a long Megatron log
whose caller keeps a few columns is opened in binary mode and handed to the bulk path.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools import trainlog


def read_trainlog(
    path: str | Path,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    *,
    keep: Collection[str] | None = None,
) -> trainlog.TrainLog:
    """Open and parse one log file (`-` reads standard input).

    With `keep`, a Megatron log is read in binary blocks by the bulk path (no line objects);
    its format is first detected from the file's opening lines in text mode.
    """
    if str(path) == "-":
        return trainlog.parse(sys.stdin, "<stdin>", format, columns, keep=keep)
    try:
        if keep is not None:
            with open(path, encoding="utf-8", errors="replace") as handle:
                head = list(itertools.islice(handle, 64))
                found = format or trainlog.detect(itertools.chain(head, handle), str(path), columns)
            # blanks before every line change no Megatron record; another decoration is taken off by `parse`
            if trainlog.bulk_usable(found, keep) and not trainlog.line_prefix(head).strip():
                with open(path, "rb") as raw:
                    return trainlog.parse_binary(raw, str(path), found, keep=keep)
        with open(path, encoding="utf-8", errors="replace") as handle:
            return trainlog.parse(handle, str(path), format, columns, keep=keep)
    except OSError as exc:
        raise ParseError(str(path), 0, "", f"a readable file ({exc.strerror})") from exc


def parse_columns(items: Iterable[str] | None) -> dict[str, str] | None:
    """`--column name=field` options → mapping; None when none given."""
    if not items:
        return None
    out: dict[str, str] = {}
    allowed = [c for c in (*trainlog.CANONICAL, *trainlog.UNIT_TARGETS) if c != "segment"]
    for item in items:
        name, sep, fieldname = item.partition("=")
        if not sep or not fieldname or name not in allowed:
            raise ParseError("--column", 0, item, "NAME=FIELD with NAME among " + ", ".join(allowed))
        out[name] = fieldname
    return out


def add_parse_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=trainlog.FORMATS, default=None, help="skip detection: the log's format")
    parser.add_argument(
        "--column",
        action="append",
        default=None,
        metavar="NAME=FIELD",
        help="generic JSONL/CSV: which field holds a column (e.g. step=iteration, step_time_ms=dt)",
    )


def parse_cli(path: Path, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    log = read_trainlog(path, getattr(args, "format", None), parse_columns(getattr(args, "column", None)))
    return log.to_json(), 0 if log.status() == "ok" else 1
