"""The `acceptance` command.

Each subcommand lives in its own module under `acceptance.cmd` and exposes
`register(subparsers)`, which adds its parser and sets `func` to a callable
taking the parsed namespace and returning the exit status. A command's module is
imported only when that command runs (or its help is asked for): `acceptance parse`
does not load pandas, matplotlib or the Kubernetes client.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from acceptance import __version__
from acceptance.cmd.lazy import LazyParser
from acceptance.errors import AcceptanceError, UsageError

# Order is the order of `acceptance --help`: command -> (module, one-line help).
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("acceptance.cmd.init", "draft baselines/NAME/cluster.yaml from a live cluster"),
    "profile": ("acceptance.cmd.profile", "check a cluster profile (baselines/NAME/cluster.yaml)"),
    "baseline": ("acceptance.cmd.baseline", "inspect handover baselines"),
    "parse": ("acceptance.cmd.parse", "print a tool's output as JSON"),
    "analyze": ("acceptance.cmd.analyze", "judge training logs: step time or loss continuity"),
    "verify": (
        "acceptance.cmd.verify",
        "check the SSHSIG signature of a report file, or a report or incident bundle folder (or .tar.gz)",
    ),
    "countersign": (
        "acceptance.cmd.countersign",
        "the other party signs a verified report folder or rendered agreement (their acceptance)",
    ),
    "bundle": ("acceptance.cmd.bundle", "assemble the first message of an incident: a signed bundle of the evidence"),
    "lost-time": ("acceptance.cmd.lost_time", "lost training time of an incident; resharding or waiting"),
    "sim": ("acceptance.cmd.sim", "the simulated H200 cluster (run a tool on it)"),
    "cleanup": ("acceptance.cmd.cleanup", "delete cluster objects that earlier runs left behind"),
    "localize": ("acceptance.cmd.localize", "find the bad node, link or switch of a cluster's fabric"),
    "agreement": (
        "acceptance.cmd.agreement",
        "the agreement as Markdown and HTML, and the provider's Prometheus alerting rules",
    ),
}
COMMAND_MODULES: tuple[str, ...] = tuple(module for module, _ in COMMANDS.values())


class _Into:
    """Stands for the command subparsers while a module registers: `add_parser` gives back the command's parser."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        for key in ("description", "epilog", "formatter_class", "usage"):
            if key in kwargs:
                setattr(self.parser, key, kwargs[key])
        return self.parser


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
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=LazyParser)
    for name, (module, help_text) in COMMANDS.items():
        subparsers.add_parser(name, help=help_text, module=module, hook="register", wrap=_Into)
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
