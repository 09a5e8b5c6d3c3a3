"""JSON Schemas of the files the harness owns, and a validator that explains in words."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError


@cache
def _schema(name: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema(name: str) -> dict[str, Any]:
    """The schema ``acceptance/schemas/<name>.schema.json`` as a dict (a copy)."""
    copied: dict[str, Any] = json.loads(json.dumps(_schema(name)))
    return copied


Problem = tuple[Sequence[str | int], str, str]


def problems(name: str, data: Any) -> Iterator[Problem]:
    """Each violation as (path inside the document, what was found, what was expected)."""
    try:
        # the same document is checked again and again (a baseline by each process of a run, each link of a
        # chain at each load): 12-20 ms a time for a 16-node baseline, the hash of its JSON text 5 ms
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):  # not JSON data (a YAML date, a set): checked as it is, each time
        yield from _found(name, data)
        return
    yield from _found_once(name, _Document(hashlib.sha256(text.encode()).hexdigest(), data))


class _Document:
    """A document as a cache key: equal when their JSON texts are (so 1 and 1.0, or true and 1, stay apart) and
    so are they (a tuple, which the schema does not take for an array, and a list write the same text)."""

    __slots__ = ("data", "digest")

    def __init__(self, digest: str, data: Any) -> None:
        self.digest, self.data = digest, data

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Document) and other.digest == self.digest and other.data == self.data


@lru_cache(maxsize=64)
def _found_once(name: str, document: _Document) -> tuple[Problem, ...]:
    return _found(name, document.data)


def _found(name: str, data: Any) -> tuple[Problem, ...]:
    """The violations, in the order of their paths; each path a tuple (a cached answer is shared)."""
    validator = jsonschema.Draft202012Validator(_schema(name))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return tuple((tuple(path), found, expected) for path, found, expected in map(_explain, errors))


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _explain(error: ValidationError) -> tuple[Sequence[str | int], str, str]:
    path: list[str | int] = list(error.absolute_path)
    kind, instance = error.validator, error.instance
    arg: Any = error.validator_value
    subschema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    if kind == "required":
        missing = error.message.split("'")[1] if "'" in error.message else str(arg)
        return path, "nothing", f"the field '{missing}'"
    if kind == "additionalProperties":
        allowed = sorted(subschema.get("properties", {}))
        extra = sorted(set(instance) - set(allowed)) if isinstance(instance, dict) else []
        where = [*path, extra[0]] if extra else path
        hint = f"one of {', '.join(allowed)}" if allowed else "no other field"
        return where, f"unknown field '{', '.join(extra)}'", hint
    if kind == "type":
        types = arg if isinstance(arg, list) else [arg]
        return path, _shown(instance), "a value of type " + " or ".join(map(str, types))
    if kind == "enum":
        return path, _shown(instance), "one of " + ", ".join(map(str, arg))
    if kind in {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}:
        sign = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}[kind]
        return path, _shown(instance), f"a number {sign} {arg}"
    if kind == "maxLength":
        return path, _shown(instance), f"at most {arg} characters"
    if kind in {"minItems", "minLength"}:
        return path, _shown(instance), f"at least {arg} item(s)" if kind == "minItems" else "a non-empty text"
    if kind == "pattern":
        return path, _shown(instance), subschema.get("description") or f"text matching {arg}"
    if kind == "anyOf":
        titles = [s.get("description") or s.get("type") for s in arg]
        return path, _shown(instance), "one of the accepted forms (" + ", ".join(map(str, titles)) + ")"
    return path, _shown(instance), error.message
