"""JSON Schemas of the files the harness owns, and a validator that explains in words."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import cache
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


def problems(name: str, data: Any) -> Iterator[tuple[Sequence[str | int], str, str]]:
    """Each violation as (path inside the document, what was found, what was expected)."""
    validator = jsonschema.Draft202012Validator(_schema(name))
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        yield _explain(error)


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
