"""The little shell the simulator understands: ``bash -c`` scripts, env prefixes, harmless chores.

Pod commands are often wrapped (``bash -c "nv-hostengine -n & sleep 2; dcgmi diag -r 3 -j | tee
/out/d.json"``); the runner runs the tools in such a script in turn, with bash's ``;``/``&&``/
``||``/``set -e`` semantics, and treats the rest as chores that print nothing (or the obvious).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

SHELL_CHORES = {
    "set", "sleep", "true", ":", "cd", "ls", "cat", "sync", "ulimit", "wait", "nvidia-smi", "ibstat", "mkdir",
    "rm", "cp", "mv", "touch", "date", "which", "source", ".", "trap", "nv-hostengine", "printenv", "ibv_devinfo",
}  # fmt: skip
PREFIXES = {"env", "exec", "time", "stdbuf", "nohup", "numactl", "taskset", "timeout"}


def strip_prefixes(argv: list[str], env: dict[str, str]) -> list[str]:
    """Drop ``VAR=value`` assignments (into `env`) and wrappers such as ``env``, ``timeout 600``, ``exec``."""
    while argv and (("=" in argv[0] and not argv[0].startswith("-")) or argv[0] in PREFIXES):
        if argv[0] in PREFIXES:  # run what follows (with its own options dropped)
            head = argv[0]
            argv = argv[1:]
            while argv and argv[0].startswith("-"):
                argv = argv[1:]
            if head == "timeout" and argv:
                argv = argv[1:]  # the duration
            continue
        k, _, v = argv[0].partition("=")
        env[k] = v
        argv = argv[1:]
    return argv


def shell_chore(argv: Sequence[str], env: dict[str, str], node: str) -> str | None:
    """The output of a shell chore (``echo``, ``export``, ``sleep`` ...), or None for a real tool."""
    prog = os.path.basename(argv[0])
    if prog == "echo":
        return " ".join(argv[1:]) + "\n"
    if prog == "export":
        for item in argv[1:]:
            k, _, v = item.partition("=")
            env[k] = v
        return ""
    if prog == "hostname":
        return env.get("HOSTNAME", node) + "\n"
    return "" if prog in SHELL_CHORES else None


def split_shell(argv: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``bash -c "a; b && c | tee f"`` -> [(";", a), (";", b), ("&&", c)]; any other argv -> [(";", argv)].

    Each command comes with the connector before it (``;`` for newlines and ``&`` too). The
    later stages of a pipeline are dropped: a pipeline prints and exits as its first command
    does (``tee``, ``grep`` ... are taken as pass-through).
    """
    argv = list(argv)
    if not (len(argv) >= 3 and os.path.basename(argv[0]) in ("bash", "sh") and "-c" in argv[1:-1]):
        return [(";", argv)]
    lexer = shlex.shlex(argv[argv.index("-c") + 1], posix=True, punctuation_chars=";&|\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    commands: list[tuple[str, list[str]]] = [(";", [])]
    piped = False
    for token in lexer:
        if token in ("&&", "||"):
            commands.append((token, []))
            piped = False
        elif token.strip("\n") in ("", ";", "&", ";;"):
            commands.append((";", []))
            piped = False
        elif token == "|":
            piped = True
        elif not piped:
            commands[-1][1].append(token)
    return [(how, c) for how, c in commands if c]
