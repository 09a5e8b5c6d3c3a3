"""YAML and JSON documents read with their source positions, for error messages.

Validation errors point at a path inside the document (``nccl.tests[1].args``);
this module maps such a path back to the line the user has to edit.

Our YAML files are small, hand-written agreements, so what a hostile or broken file could do is
bounded before anything is built from it: at most `MAX_BYTES`, no aliases (`*name`: a
"billion laughs" document expands a few hundred bytes into gigabytes), and nesting deeper than
the parser can follow is a ParseError like any other, with the file and line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from acceptance.errors import ParseError

#: the largest YAML file we read (a 1,024-node profile is about 40 KB)
MAX_BYTES = 1 << 20


class _NoAliasLoader(yaml.SafeLoader):
    """The safe loader, refusing aliases: every value is written out where it is used."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None,
                None,
                f"an alias (*{getattr(event, 'anchor', '')}): aliases are not accepted, write the value out",
                event.start_mark,
            )
        node: yaml.Node | None = super().compose_node(parent, index)  # type: ignore[arg-type]
        return node


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
    """Read and parse `path`; a broken, oversized, aliased or too deeply nested file raises ParseError."""
    if path.is_dir():
        raise ParseError(str(path), 0, "", "a YAML file (this is a directory)")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ParseError(str(path), 0, "", f"a readable YAML file ({exc.strerror})") from exc
    if len(raw) > MAX_BYTES:
        raise ParseError(str(path), 0, "", f"a YAML file of at most {MAX_BYTES // 1024} KiB (this one is larger)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ParseError(str(path), line, "", f"UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_yaml(text, path)


def parse_yaml(text: str, path: Path) -> Document:
    """Parse YAML text read from `path` (see `load_yaml`)."""
    try:
        loader = _NoAliasLoader(text)  # the reader refuses control characters here, before any parsing
    except yaml.YAMLError as exc:
        raise ParseError(str(path), 0, "", f"valid YAML ({' '.join(str(exc).split())})") from exc
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except RecursionError:
        raise ParseError(str(path), 0, "", "YAML nested at most a few hundred levels deep") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        lines = text.splitlines()
        bad = lines[line - 1] if 0 < line <= len(lines) else ""
        raise ParseError(str(path), line, bad, f"valid YAML ({exc.problem or exc})") from exc
    except yaml.YAMLError as exc:
        raise ParseError(str(path), 0, "", f"valid YAML ({exc})") from exc
    finally:
        loader.dispose()
    return Document(path=path, data=data, root=root)


def format_path(path: Sequence[str | int]) -> str:
    """``["nccl", "tests", 1, "args"]`` → ``nccl.tests[1].args``; the root is ``(top level)``."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "(top level)"
