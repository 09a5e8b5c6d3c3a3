"""JSON documents for people and scripts: indented at the top, one line per record below.

`json.dump(doc, out, indent=2)` runs the pure-Python encoder and makes one `write` per
token (678,000 writes for one large nccl-tests capture). Here the outer levels are laid out
by hand, two spaces per level, and everything from `inline_from` levels down (a data row, a
rank, a step) is one line from the C encoder; the text is built once and written once.
The content is the same JSON; only the whitespace differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TextIO

from acceptance.jsontext import JsonItems


def _one_line_encoder() -> Callable[[Any], str]:
    """`json.dumps` without its per-call set-up: CPython's C encoder made once, default separators."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # another interpreter: the pure-Python encoder
        return json.JSONEncoder().encode
    iterencode = make(None, None, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return json.encoder.encode_basestring_ascii(value)
        return "".join(iterencode(value, 0))

    return encode


_encode = _one_line_encoder()


def pretty(value: Any, inline_from: int, level: int = 0) -> str:
    """`value` as JSON: containers indented down to depth `inline_from`, one line from there on.

    An array of scalars is always one line.
    """
    if isinstance(value, JsonItems):  # items encoded already: laid out as their values would be
        if level >= inline_from or not value:
            return "[" + ", ".join(value) + "]"
        if level + 1 < inline_from:
            return pretty([json.loads(item) for item in value], inline_from, level)
        inner = "  " * (level + 1)
        return "[\n" + inner + (",\n" + inner).join(value) + "\n" + "  " * level + "]"
    if level >= inline_from or not value or not isinstance(value, dict | list):
        return _encode(value)
    inner = "  " * (level + 1)
    close = "  " * level
    if isinstance(value, dict):
        items = [f"{inner}{_encode(str(k))}: {pretty(v, inline_from, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + close + "}"
    if not any(isinstance(v, dict | list) for v in value):
        return _encode(value)
    if level + 1 >= inline_from:  # one line per item (a data row, a rank): encoded straight away
        return "[\n" + ",\n".join([inner + _encode(v) for v in value]) + "\n" + close + "]"
    return "[\n" + ",\n".join(inner + pretty(v, inline_from, level + 1) for v in value) + "\n" + close + "]"


def write(out: TextIO, value: Any, inline_from: int) -> None:
    """One buffered write of the whole document, then a line end."""
    out.write(pretty(value, inline_from) + "\n")
    out.flush()
