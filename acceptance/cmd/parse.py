"""`acceptance parse KIND FILE`: print a tool's output as stable JSON (scripts depend on it).

Each kind is served by a module `acceptance.cmd.parse_KIND` (the I/O side of the pure
`acceptance.tools.KIND`: it reads the file, or standard input for `-`) that exposes
`add_parse_options(parser)` and `parse_cli(path, args) -> (document, exit_status)`, or
`write_cli(path, args, out) -> exit_status` when it streams its document itself: exit 0
parsed and the tool's run was clean, 1 parsed but the run failed or is incomplete, 2 not
recognised. A `ParseError` from the module also means 2.

A kind's module is imported only when that kind is parsed (its options are added then), so
`acceptance parse nccl` never loads pandas for the training-log reader. The document is
written once (`acceptance.cmd.jsonout`), indented at the top and one line per record.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

from acceptance.cmd import jsonout
from acceptance.cmd.lazy import LazyParser
from acceptance.errors import ParseError

KINDS: dict[str, tuple[str, str]] = {
    "nccl": ("acceptance.cmd.parse_nccl", "nccl-tests output (all_reduce_perf and siblings)"),
    "dcgm": ("acceptance.cmd.parse_dcgm", "dcgmi diag output, JSON (-j) or text"),
    "trainlog": ("acceptance.cmd.parse_trainlog", "a training log (Megatron, NeMo, torchtitan, HF, ...)"),
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("parse", help="print a tool's output as JSON")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True, parser_class=LazyParser)
    for kind, (module_name, help_text) in KINDS.items():
        sub = kinds.add_parser(kind, help=help_text, module=module_name, hook="add_parse_options")
        sub.add_argument("file", type=Path, help="the captured output ('-' for standard input)")
        sub.set_defaults(func=_run, parse_module=module_name)


def _run(args: argparse.Namespace) -> int:
    module = importlib.import_module(args.parse_module)
    label = "<stdin>" if str(args.file) == "-" else str(args.file)
    if label != "<stdin>":
        if args.file.is_dir():
            print(f"acceptance parse: {label}: is a directory, not a captured output", file=sys.stderr)
            return 2
        if not args.file.exists():
            print(f"acceptance parse: {label}: no such file", file=sys.stderr)
            return 2
    try:
        if hasattr(module, "write_cli"):
            return int(module.write_cli(args.file, args, sys.stdout))
        document, status = module.parse_cli(args.file, args)
    except ParseError as exc:
        print(f"acceptance parse: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"acceptance parse: {label}: cannot read it ({exc.strerror or exc})", file=sys.stderr)
        return 2
    jsonout.write(sys.stdout, document, getattr(module, "JSON_INLINE_FROM", 4))
    return int(status)
