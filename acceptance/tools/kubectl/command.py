"""The shell command lines in a paste: where one command's output ends and the next begins.

A command line is ``kubectl …`` at the start of a line, or after a shell prompt that ends in
``$``, ``#``, ``%`` or ``>`` (``$ ``, ``bash$ ``, ``controlplane $ ``, ``[user@host dir]$ ``,
``root@host:~/dir# ``, ``C:\\...>``, a markdown-quoted ``> ``). A prompt with no command
(``controlplane $ ``) also ends the output before it. From the command the verb, the resource and
the names given are read (``describe node NAME``, ``describe node/NAME``), up to a pipe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMAND = re.compile(r"^(?:(?:[^'\"`\s][^'\"`]{0,160}?)?[$#%>] ?)?kubectl(?:\.exe)?\s+(?P<args>.*)$")
_EMPTY_PROMPT = re.compile(r"^(?:[\w.@:~/\[\]-]+ ?)?[$%#]$")
# flags of kubectl that take a separate value (``-n NS``); the value is not a name
_VALUED = {"-n", "--namespace", "-l", "--selector", "--context", "--kubeconfig", "--cluster", "--user", "-o",
           "--output", "--sort-by", "--field-selector", "-c", "--container", "-s", "--server"}  # fmt: skip
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_NODE = {"node", "nodes", "no"}
_POD = {"pod", "pods", "po"}


@dataclass(frozen=True)
class Command:
    """``kubectl <verb> <resource> <names…>`` as typed; `resource` is ``node``, ``pod`` or as typed."""

    text: str
    verb: str = ""
    resource: str = ""
    names: tuple[str, ...] = ()

    @property
    def node_name(self) -> str | None:
        """The node a ``describe node`` command names, when it names exactly one."""
        if self.verb != "describe" or self.resource != "node" or len(self.names) != 1:
            return None
        return self.names[0] if _NAME.match(self.names[0]) else None


def _resource(word: str) -> str:
    kind = word.split(".", 1)[0].lower()
    return "node" if kind in _NODE else "pod" if kind in _POD else kind


def parse(line: str) -> Command | None:
    """The command on `line`, or None when the line is no command line (an empty prompt gives ``Command("")``)."""
    if "kubectl" not in line and not line.rstrip().endswith(("$", "#", "%")):
        return None
    if _EMPTY_PROMPT.match(line.strip()):
        return Command("")
    match = _COMMAND.match(line)
    if not match:
        return None
    args = match.group("args").split("|", 1)[0].split()
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    if not words:
        return Command(match.group("args").strip())
    verb, rest = words[0], words[1:]
    resource = ""
    names: list[str] = []
    if rest:
        head = rest[0]
        if "/" in head:
            resource = _resource(head.split("/", 1)[0])
            names = [w.split("/", 1)[1] for w in rest if "/" in w]
        else:
            resource = _resource(head)
            names = rest[1:]
    return Command(match.group("args").strip(), verb, resource, tuple(names))
