"""YAML and JSON documents read with their source positions, for error messages.

Validation errors point at a path inside the document (``nccl.tests[1].args``);
this module maps such a path back to the line the user has to edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acceptance.errors import ParseError


@dataclass(frozen=True)
class Document:
    """A parsed YAML file and the node tree that knows where each value stands."""

    path: Path
    data: Any
    root: yaml.Node | None

    def line_of(self, path: Sequence[str | int]) -> int:
        """1-based line of the value at `path`, or of its nearest ancestor that exists."""
        node = self.root
        line = node.start_mark.line + 1 if node is not None else 0
        for key in path:
            child = _child(node, key)
            if child is None:
                break
            node = child
            line = node.start_mark.line + 1
        return line


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(key):
                found: yaml.Node = v
                return found
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
        child: yaml.Node = node.value[key]
        return child
    return None


def load_yaml(path: Path) -> Document:
    """Read and parse `path`; a broken file raises ParseError with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(str(path), 0, "", f"a readable YAML file ({exc.strerror})") from exc
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        lines = text.splitlines()
        bad = lines[line - 1] if 0 < line <= len(lines) else ""
        raise ParseError(str(path), line, bad, f"valid YAML ({exc.problem or exc})") from exc
    except yaml.YAMLError as exc:
        raise ParseError(str(path), 0, "", f"valid YAML ({exc})") from exc
    return Document(path=path, data=data, root=root)


def format_path(path: Sequence[str | int]) -> str:
    """``["nccl", "tests", 1, "args"]`` → ``nccl.tests[1].args``; the root is ``(top level)``."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "(top level)"
