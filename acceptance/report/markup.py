"""HTML text for the report's pages: one escaping rule for every renderer."""

from __future__ import annotations

from html import escape


def esc(value: object) -> str:
    """`value` as HTML text; None is the empty string."""
    return escape("" if value is None else str(value))
