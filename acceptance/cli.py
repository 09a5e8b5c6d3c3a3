"""The `acceptance` command.

Each subcommand lives in its own module under `acceptance.cmd` and exposes
`register(subparsers)`, which adds its parser and sets `func` to a callable
taking the parsed namespace and returning the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from acceptance import __version__
from acceptance.errors import AcceptanceError, UsageError

# Order is the order of `acceptance --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "acceptance.cmd.init",
    "acceptance.cmd.profile",
    "acceptance.cmd.baseline",
    "acceptance.cmd.parse",
    "acceptance.cmd.analyze",
    "acceptance.cmd.verify",
    "acceptance.cmd.bundle",
    "acceptance.cmd.lost_time",
    "acceptance.cmd.sim",
    "acceptance.cmd.cleanup",
    "acceptance.cmd.localize",
)

EPILOG = """\
exit status:
  0  success (a parsed run was clean, a check passed, a signature verified)
  1  the thing examined failed (a failing or incomplete run, a failed check, a bad signature)
  2  usage error, or input that could not be read or recognised
  3  inconclusive (analyze: not enough data to decide either way)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acceptance",
        description="Recovery acceptance harness for multi-node GPU training clusters.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"recovery-acceptance {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        status: int = args.func(args)
    except UsageError as exc:
        print(f"acceptance: error: {exc}", file=sys.stderr)
        return 2
    except AcceptanceError as exc:
        print(f"acceptance: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("acceptance: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `acceptance parse ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    sys.exit(main())
