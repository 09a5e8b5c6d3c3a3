"""`dcgmi diag` output of DCGM 4.x: the `-j` JSON (jsoncpp, TAB-indented, keys sorted) and the text table.

The JSON carries ``"simulated" : true`` in `metadata`; the text table has a
``Simulated`` row in its Metadata block. Both are the only departures from the real tool.
"""

from __future__ import annotations

import json
from typing import Any

from acceptance.sim.cluster import GPU_DEVICE_ID
from acceptance.sim.dcgmmodel import CATEGORY_ORDER, DiagRun, TestResult

BORDER = "+---------------------------+------------------------------------------------+"
HEADER = "| Diagnostic                | Result                                         |"
DOUBLE = "+===========================+================================================+"
BANNER = "Successfully ran diagnostic for group."
CHUNK = 45
RIGHT_MARGIN = 74


# --- jsoncpp's styled stream writer ---------------------------------------------------------


def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _multiline(items: list[Any]) -> bool:
    if len(items) * 3 >= RIGHT_MARGIN:
        return True
    if any(isinstance(v, dict | list) and v for v in items):
        return True
    return 4 + 2 * (len(items) - 1) + sum(len(_scalar(v)) for v in items) > RIGHT_MARGIN


def _write(value: Any, indent: str, out: list[str], lead: str) -> None:
    """Append `value` to `out`; `lead` is what precedes it on its first line (a key, or the indent)."""
    if isinstance(value, dict) and value:
        out.append(lead.rstrip() if lead.strip() else lead + "{")
        if lead.strip():
            out.append(indent + "{")
        keys = sorted(value)
        for i, key in enumerate(keys):
            _write(value[key], indent + "\t", out, f"{indent}\t{json.dumps(key)} : ")
            if i < len(keys) - 1:
                out[-1] += ","
        out.append(indent + "}")
    elif isinstance(value, list) and value and _multiline(value):
        out.append(lead.rstrip() if lead.strip() else lead + "[")
        if lead.strip():
            out.append(indent + "[")
        for i, item in enumerate(value):
            _write(item, indent + "\t", out, indent + "\t")
            if i < len(value) - 1:
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
    _write(value, "", out, "")
    return "\n".join(out) + "\n"


# --- JSON document ------------------------------------------------------------------------------


def _warning_json(w: Any) -> dict[str, Any]:
    return {
        "error_category": w.category,
        "error_id": w.error_id,
        "error_severity": w.severity,
        "warning": w.message,
    }


def _test_json(test: TestResult) -> dict[str, Any]:
    results = []
    for gpu, status in enumerate(test.gpus):
        entry: dict[str, Any] = {
            "entity_group": "GPU",
            "entity_group_id": 1,
            "entity_id": gpu,
            "status": status,
        }
        if test.info and test.info[gpu]:
            entry["info"] = list(test.info[gpu])
        mine = [_warning_json(w) for w in test.warnings if w.gpu == gpu]
        if mine:
            entry["warnings"] = mine
        results.append(entry)
    summary: dict[str, Any] = {"status": "Fail" if test.status == "Warn" else test.status}
    if test.warnings:
        summary["warnings"] = [_warning_json(w) for w in test.warnings]
    return {"name": test.name, "results": results, "test_summary": summary}


def diag_document(run: DiagRun) -> dict[str, Any]:
    categories = []
    for category in CATEGORY_ORDER:
        tests = [_test_json(t) for t in run.tests if t.category == category]
        if tests:
            categories.append({"category": category, "tests": tests})
    entities = [
        {"device_id": GPU_DEVICE_ID, "entity_id": g.index, "serial_num": g.serial} for g in run.node.gpus
    ]
    return {
        "DCGM Diagnostic": {"test_categories": categories},
        "entity_groups": [{"entities": entities, "entity_group": "GPU", "entity_group_id": 1}],
        "metadata": {"Driver Version Detected": run.driver, "simulated": True, "version": run.dcgm_version},
    }


def render_json(run: DiagRun) -> str:
    return jsoncpp(diag_document(run))


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
        if not tests and category == "Deployment":
            continue
        lines.append(_separator(category, category == "Deployment"))
        for test in tests:
            lines += _rows(test.name, test.status)
            for gpu, status in enumerate(test.gpus):
                lines += _rows("", f"GPU{gpu}: {status}")
            for w in test.warnings:
                lines += _rows("Warning" if w.gpu is None else f"Warning: GPU{w.gpu}", w.message)
    lines.append(BORDER)
    return "\n".join(lines) + "\n"
