"""What a criterion adds to a new handover baseline."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BaselinePart:
    """Sections of the baseline document a criterion fills, and what it could not record."""

    conditions: Mapping[str, Any] = field(default_factory=dict)
    results: Mapping[str, Any] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
