"""A sub-parser whose options are added the first time it parses, so `acceptance X` imports only X's modules."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from typing import Any


class LazyParser(argparse.ArgumentParser):
    """Filled in by ``MODULE.<hook>(parser)`` (through `wrap`, if given) before it first parses."""

    def __init__(
        self,
        *args: Any,
        module: str = "",
        hook: str = "",
        wrap: Callable[[argparse.ArgumentParser], object] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._module, self._hook, self._wrap = module, hook, wrap
        self._loaded = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if not self._loaded and self._module:
            self._loaded = True
            fill = getattr(importlib.import_module(self._module), self._hook)
            fill(self._wrap(self) if self._wrap else self)
        return super().parse_known_args(args, namespace)
