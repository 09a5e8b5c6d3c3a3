"""`dcgmi diag` output of DCGM 4.x: the `-j` JSON (jsoncpp, TAB-indented, keys sorted) and the text table.

The JSON carries ``"simulated" : true`` in `metadata`; the text table has a
``Simulated`` row in its Metadata block. Both are the only departures from the real tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from acceptance.sim.model.cluster import GPU_DEVICE_ID
from acceptance.sim.model.dcgmmodel import CATEGORY_ORDER, DiagRun, TestResult

BORDER = "+---------------------------+------------------------------------------------+"
HEADER = "| Diagnostic                | Result                                         |"
DOUBLE = "+===========================+================================================+"
BANNER = "Successfully ran diagnostic for group."
CHUNK = 45
RIGHT_MARGIN = 74


# --- jsoncpp's styled stream writer ---------------------------------------------------------


_quote: Callable[[str], str] = json.encoder.encode_basestring


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return str(value)


def _multiline(items: list[Any]) -> bool:
    if len(items) * 3 >= RIGHT_MARGIN:
        return True
    if any(isinstance(v, dict | list) and v for v in items):
        return True
    return 4 + 2 * (len(items) - 1) + sum(len(_scalar(v)) for v in items) > RIGHT_MARGIN


class _Raw(list[str]):
    """Lines already written (with their indentation): a value rendered ahead of time, for speed."""


def _write(value: Any, indent: str, out: list[str], lead: str, keyed: bool) -> None:
    """Append `value` to `out`; `lead` precedes it on its first line (``indent"key" : `` or the indent)."""
    if isinstance(value, _Raw):
        if keyed:
            out.append(lead[:-1])
            out.extend(value)
        else:
            out.append(lead + value[0].lstrip("\t"))
            out.extend(value[1:])
    elif isinstance(value, dict) and value:
        if keyed:
            out.append(lead[:-1])
            out.append(indent + "{")
        else:
            out.append(lead + "{")
        inner = indent + "\t"
        keys = sorted(value)
        if not any(isinstance(v, dict | list) for v in value.values()):  # flat: the common case, fast
            out.append(",\n".join(f"{inner}{_quote(k)} : {_scalar(value[k])}" for k in keys))
            out.append(indent + "}")
            return
        last = len(keys) - 1
        for i, key in enumerate(keys):
            _write(value[key], inner, out, f"{inner}{_quote(key)} : ", True)
            if i < last:
                out[-1] += ","
        out.append(indent + "}")
    elif isinstance(value, list) and value and _multiline(value):
        if keyed:
            out.append(lead[:-1])
            out.append(indent + "[")
        else:
            out.append(lead + "[")
        inner = indent + "\t"
        last = len(value) - 1
        for i, item in enumerate(value):
            _write(item, inner, out, inner, False)
            if i < last:
                out[-1] += ","
        out.append(indent + "]")
    elif isinstance(value, list):
        out.append(lead + ("[ " + ", ".join(_scalar(v) for v in value) + " ]" if value else "[]"))
    elif isinstance(value, dict):
        out.append(lead + "{}")
    else:
        out.append(lead + _scalar(value))


def jsoncpp(value: Any) -> str:
    out: list[str] = []
    _write(value, "", out, "", False)
    return "\n".join(out) + "\n"


# --- JSON document ------------------------------------------------------------------------------


def _warning_json(w: Any) -> dict[str, Any]:
    return {
        "error_category": w.category,
        "error_id": w.error_id,
        "error_severity": w.severity,
        "warning": w.message,
    }


RESULT_INDENT = "\t" * 7  # where the entity results of a test sit in the document


def _entity(gpu: int, status: str, info: tuple[str, ...], warnings: list[dict[str, Any]]) -> _Raw:
    """One entity result, written the way jsoncpp would at RESULT_INDENT (keys in sorted order)."""
    ind, inner = RESULT_INDENT, RESULT_INDENT + "\t"
    out = [ind + "{", f'{inner}"entity_group" : "GPU",', f'{inner}"entity_group_id" : 1,']
    out.append(f'{inner}"entity_id" : {gpu},')
    if info:
        quoted = [_quote(x) for x in info]
        if len(quoted) * 3 >= RIGHT_MARGIN or 4 + 2 * (len(quoted) - 1) + sum(map(len, quoted)) > RIGHT_MARGIN:
            deeper = inner + "\t"
            out += [f'{inner}"info" :', inner + "[", deeper + f",\n{deeper}".join(quoted), inner + "],"]
        else:
            out.append(f'{inner}"info" : [ ' + ", ".join(quoted) + " ],")
    out.append(f'{inner}"status" : {_quote(status)}' + ("," if warnings else ""))
    if warnings:
        _write(warnings, inner, out, f'{inner}"warnings" : ', True)
    out.append(ind + "}")
    return _Raw(out)


def _test_json(test: TestResult, ids: list[int], fast: bool = False) -> dict[str, Any]:
    results: list[Any] = []
    for pos, status in enumerate(test.gpus):
        gpu = ids[pos]
        info = test.info[pos] if test.info else ()
        mine = [_warning_json(w) for w in test.warnings if w.gpu == gpu]
        if fast:
            results.extend(_entity(gpu, status, info, mine))
            results[-1] += ","
            continue
        entry: dict[str, Any] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": status}
        if info:
            entry["info"] = list(info)
        if mine:
            entry["warnings"] = mine
        results.append(entry)
    if fast:
        results[-1] = results[-1][:-1]
        results = _Raw([RESULT_INDENT[:-1] + "[", *results, RESULT_INDENT[:-1] + "]"])
    summary: dict[str, Any] = {"status": "Fail" if test.status == "Warn" else test.status}
    if test.warnings:
        summary["warnings"] = [_warning_json(w) for w in test.warnings]
    return {"name": test.name, "results": results, "test_summary": summary}


def diag_document(run: DiagRun, fast: bool = False) -> dict[str, Any]:
    """The `-j` document as plain data (`fast`: entity results pre-rendered, for `render_json` only)."""
    categories = []
    ids = [g.index for g in run.node.gpus]
    for category in CATEGORY_ORDER:
        tests = [_test_json(t, ids, fast) for t in run.tests if t.category == category]
        if tests:
            categories.append({"category": category, "tests": tests})
    entities = [{"device_id": GPU_DEVICE_ID, "entity_id": g.index, "serial_num": g.serial} for g in run.node.gpus]
    return {
        "DCGM Diagnostic": {"test_categories": categories},
        "entity_groups": [{"entities": entities, "entity_group": "GPU", "entity_group_id": 1}],
        "metadata": {"Driver Version Detected": run.driver, "simulated": True, "version": run.dcgm_version},
    }


def render_json(run: DiagRun) -> str:
    return jsoncpp(diag_document(run, fast=True))


# --- text table -----------------------------------------------------------------------------------


def _rows(name: str, value: str) -> list[str]:
    chunks = [value[i : i + CHUNK] for i in range(0, len(value), CHUNK)] or [""]
    lines = [f"| {name:<25} | {chunks[0]:<46} |"]
    lines += [f"| {'':<25} | {c:<46} |" for c in chunks[1:]]
    return lines


def _separator(category: str, first: bool) -> str:
    edge = "|" if first else "+"
    return f"{edge}{('-----  ' + category + '  ').ljust(27, '-')}+{'-' * 48}{edge}"


def render_text(run: DiagRun) -> str:
    ids = ", ".join(GPU_DEVICE_ID for _ in run.node.gpus)
    lines = [BANNER, BORDER, HEADER, DOUBLE, _separator("Metadata", True)]
    lines += _rows("DCGM Version", run.dcgm_version)
    lines += _rows("Driver Version Detected", run.driver)
    lines += _rows("GPU Device IDs Detected", ids)
    lines += _rows("Simulated", "yes (recovery-acceptance sim)")
    for category in CATEGORY_ORDER:
        tests = [t for t in run.tests if t.category == category]
        if not tests:  # DCGM 4.x prints the categories of its response only (4.4.2 r2: no Stress)
            continue
        lines.append(_separator(category, category == "Deployment"))
        for test in tests:
            lines += _rows(test.name, test.status)
            for gpu, status in zip(run.node.gpus, test.gpus, strict=True):
                lines += _rows("", f"GPU{gpu.index}: {status}")
            for w in test.warnings:
                lines += _rows("Warning" if w.gpu is None else f"Warning: GPU{w.gpu}", w.message)
    lines.append(BORDER)
    return "\n".join(lines) + "\n"
