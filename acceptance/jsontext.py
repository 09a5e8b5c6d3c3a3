"""`JsonItems`: a JSON array whose items are already encoded, for writers that lay out JSON by hand.

A parser that can write a record's JSON faster than `json.dumps` of its dict (rows of a large
capture) hands its items over as text; `acceptance.cmd.jsonout.pretty` places them one per
line, as it would the encoded dicts. Only the items' text is trusted: each must be one JSON
value, encoded as `json.dumps` would (`", "` and `": "` separators, ASCII).
"""

from __future__ import annotations


class JsonItems(list[str]):
    """Items of a JSON array, each one value's JSON text."""
