"""`dcgmi diag -j` documents of every generation (DCGM 2.x to 4.x).

2.x–3.0: root ``"DCGM GPU Diagnostic"``, per-GPU results keyed ``gpu_ids`` (a string),
``info``/``warnings`` as strings. 3.1–3.3: top-level ``version``, ``Driver Version
Detected``, ``GPU Device IDs``, ``GPU Device Serials``; results keyed ``gpu_id``;
warnings as objects with ``error_id``/``error_category``/``error_severity``.
4.x: root ``"DCGM Diagnostic"`` with ``entity_groups`` and ``metadata`` beside it,
results keyed ``entity_group``/``entity_id``, ``info`` arrays and a ``test_summary``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.dcgm.assemble import build_report, merge_tests, worst_of_checks
from acceptance.tools.dcgm.model import (
    FAIL,
    PASS,
    SKIP,
    WARN,
    DcgmMessage,
    DcgmReport,
    DcgmTest,
    GpuDevice,
    ReportError,
)
from acceptance.tools.dcgm.names import SOFTWARE_CHECKS, category_of, gpu_in_message, normalize_test_name

ROOT_KEYS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")
EXPECTED_DOC = 'a dcgmi diag -j document (root key "DCGM Diagnostic" or "DCGM GPU Diagnostic")'
_STATUS = {"pass": PASS, "fail": FAIL, "skip": SKIP, "warn": WARN}
_NOT_A_SERIAL = ("<<<NOT_SUPPORTED>>>", "N/A", "")


def parse_json(text: str, start: int, source: str) -> DcgmReport:
    """Parse the JSON document that begins at offset `start` of `text`, and any that follow it.

    Several documents in one capture (a retried run, a log collected twice) are judged
    together: each test keeps its worst result.
    """
    reports = []
    decoder = json.JSONDecoder()
    while start >= 0:
        try:
            doc, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            line = text.count("\n", 0, exc.pos) + 1
            shown = text.splitlines()[line - 1] if text.splitlines()[line - 1 : line] else ""
            raise ParseError(source, line, shown.strip(), f"{EXPECTED_DOC}, complete ({exc.msg})") from exc
        except RecursionError:
            line = text.count("\n", 0, start) + 1
            raise ParseError(source, line, "", f"{EXPECTED_DOC} (this one nests too deeply to read)") from None
        first_line = text.count("\n", 0, start) + 1
        if not isinstance(doc, dict):
            raise ParseError(source, first_line, "", EXPECTED_DOC)
        try:
            reports.append(_Reader(source, first_line).document(doc))
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:  # a value of the wrong type
            raise ParseError(source, first_line, str(exc)[:120], f"{EXPECTED_DOC} with the documented types") from exc
        start = _next_document(text, end)
    if len(reports) == 1 or all(r == reports[0] for r in reports):
        return reports[0]
    first = reports[0]
    errors = [e for r in reports for e in r.errors]
    return build_report(
        "json",
        merge_tests(t for r in reports for t in r.tests),
        errors=errors if not any(r.tests for r in reports) else [],
        dcgm_version=first.dcgm_version,
        driver_version=first.driver_version,
        devices={g: d for r in reports for g, d in r.devices.items()},
    )


def _next_document(text: str, end: int) -> int:
    """Offset of the next line that opens a JSON object after `end`, or -1."""
    pos = end
    while True:
        newline = text.find("\n", pos)
        if newline < 0:
            return -1
        line = text[newline + 1 : text.find("\n", newline + 1) if text.find("\n", newline + 1) >= 0 else None]
        if line.strip().startswith("{"):
            return newline + 1 + line.index("{")
        pos = newline + 1


class _Reader:
    def __init__(self, source: str, line: int) -> None:
        self.source = source
        self.line = line

    def fail(self, text: str, expected: str) -> ParseError:
        return ParseError(self.source, self.line, text, expected)

    def document(self, doc: Mapping[str, Any]) -> DcgmReport:
        if "iterations" in doc:
            return self.iterations(doc)
        key = next((k for k in ROOT_KEYS if k in doc), None)
        if key is None:
            raise self.fail(", ".join(repr(k) for k in list(doc)[:4]), EXPECTED_DOC)
        body = doc[key]
        if not isinstance(body, dict):
            raise self.fail(repr(body)[:80], f'an object under "{key}"')
        found = doc.get("metadata")
        meta: Mapping[str, Any] = found if isinstance(found, dict) else {}
        version = _str(meta.get("version") or doc.get("version") or body.get("version"))
        driver = _str(meta.get("Driver Version Detected") or doc.get("Driver Version Detected"))
        if "runtime_error" in body:
            return build_report(
                "json",
                (),
                errors=[ReportError(None, str(body["runtime_error"]).strip())],
                dcgm_version=version,
                driver_version=driver,
            )
        categories = body.get("test_categories")
        if not isinstance(categories, list):
            raise self.fail(", ".join(body)[:80], '"test_categories" (a list) or "runtime_error"')
        tests = [t for cat in categories for t in self.category(cat)]
        software = [t for t in tests if t.name == "software"]
        others = [t for t in tests if t.name != "software"]
        folded = merge_tests(software, combine=worst_of_checks) + merge_tests(others)
        return build_report("json", folded, dcgm_version=version, driver_version=driver, devices=self.devices(doc))

    def iterations(self, doc: Mapping[str, Any]) -> DcgmReport:
        runs = doc.get("iterations")
        if not isinstance(runs, list) or not runs:
            raise self.fail(repr(runs)[:80], '"iterations": a non-empty list of diag documents')
        reports = [self.document(r) for r in runs if isinstance(r, dict) and r]
        overall = str(doc.get("Overall Result", "")).lower()
        errors = [e for r in reports for e in r.errors]
        if overall == FAIL and doc.get("warning"):
            errors.append(ReportError(None, f"iterations aborted: {doc['warning']}"))
        if not reports:
            raise self.fail("", "at least one completed iteration")
        first = reports[0]
        tests = merge_tests(t for r in reports for t in r.tests)
        devices = {g: d for r in reports for g, d in r.devices.items()}
        failed = overall == FAIL
        only_errors = errors if not tests or (failed and not any(t.status == FAIL for t in tests)) else []
        return build_report(
            "json",
            tests,
            errors=only_errors,
            dcgm_version=first.dcgm_version,
            driver_version=first.driver_version,
            devices=devices,
            failed=failed,
        )

    def devices(self, doc: Mapping[str, Any]) -> dict[int, GpuDevice]:
        out: dict[int, GpuDevice] = {}
        for group in doc.get("entity_groups") or []:
            if not isinstance(group, dict) or group.get("entity_group") != "GPU":
                continue
            for ent in group.get("entities") or []:
                if isinstance(ent, dict) and "entity_id" in ent:
                    out[int(ent["entity_id"])] = GpuDevice(
                        serial=_serial(ent.get("serial_num")), device_id=_str(ent.get("device_id"))
                    )
        serials = doc.get("GPU Device Serials")
        ids = doc.get("GPU Device IDs")
        if isinstance(serials, dict) or isinstance(ids, list):
            serials = serials if isinstance(serials, dict) else {}
            ids = ids if isinstance(ids, list) else []
            for gpu in sorted({int(k) for k in serials} | set(range(len(ids)))):
                out[gpu] = GpuDevice(
                    serial=_serial(serials.get(str(gpu))),
                    device_id=_str(ids[gpu]) if gpu < len(ids) else None,
                )
        return out

    def category(self, cat: Any) -> list[DcgmTest]:
        if not isinstance(cat, dict) or not isinstance(cat.get("tests", []), list):
            raise self.fail(repr(cat)[:80], 'a category object {"category": ..., "tests": [...]}')
        return [self.test(t, str(cat.get("category", ""))) for t in cat.get("tests", []) if t]

    def test(self, entry: Any, category: str) -> DcgmTest:
        if not isinstance(entry, dict) or "name" not in entry:
            raise self.fail(repr(entry)[:80], 'a test object with "name" and "results"')
        shown = str(entry["name"])
        name = normalize_test_name(shown)
        prefix = f"{shown}: " if shown in SOFTWARE_CHECKS else ""
        gpus: dict[int, str] = {}
        others: dict[str, str] = {}  # entities other than GPUs: CPU0, ...
        messages: list[DcgmMessage] = []
        plain: list[str] = []
        for result in entry.get("results") or []:
            if not isinstance(result, dict):
                raise self.fail(repr(result)[:80], "a result object")
            status = self.status(result.get("status"))
            entity, gpu_ids = _entity(result)
            for gpu in gpu_ids:
                gpus[gpu] = status
            if not gpu_ids and entity is not None:
                others[entity] = status
            elif not gpu_ids:
                plain.append(status)
            messages.extend(_messages(result, entity, gpu_ids[0] if len(gpu_ids) == 1 else None, prefix))
        summary = entry.get("test_summary")
        rows = [*gpus.values(), *others.values(), *plain]
        shown_summary = None
        if isinstance(summary, dict):
            # DCGM's verdict of the whole test; a failed row still fails it (assemble.rows_decide)
            overall = self.status(summary.get("status"))
            messages.extend(m for m in _messages(summary, None, None, prefix) if m not in messages)
            if overall != FAIL and FAIL in plain:  # a failed result that names no entity
                shown_summary, overall = overall, FAIL
        else:
            overall = worst_of_checks(rows) if rows else SKIP
        if prefix and overall == FAIL and not messages:
            messages.append(DcgmMessage("error", f"{shown}: Fail"))
        return DcgmTest(
            name, category or category_of(name), overall, gpus, tuple(messages), entities=others, summary=shown_summary
        )

    def status(self, value: Any) -> str:
        status = _STATUS.get(str(value).strip().lower())
        if status is None:
            raise self.fail(repr(value), 'a status "Pass", "Fail", "Skip" or "Warn"')
        return status


def _entity(result: Mapping[str, Any]) -> tuple[str | None, list[int]]:
    if "entity_id" in result:
        group = str(result.get("entity_group", "GPU"))
        ident = int(result["entity_id"])
        return f"{group}{ident}", [ident] if group == "GPU" else []
    for key in ("gpu_id", "gpu_ids"):
        if key in result and str(result[key]).strip() != "":
            ids = [int(x) for x in str(result[key]).split(",") if x.strip()]
            return (f"GPU{ids[0]}" if len(ids) == 1 else None), ids
    if "cpu_id" in result:
        return f"CPU{result['cpu_id']}", []
    return None, []


def _messages(result: Mapping[str, Any], entity: str | None, gpu: int | None, prefix: str) -> list[DcgmMessage]:
    out = []
    warnings = result.get("warnings")
    if isinstance(warnings, str):
        warnings = [{"warning": warnings}]
    for w in warnings or []:
        if isinstance(w, dict):
            text = str(w.get("warning", w.get("warnings", ""))).strip()
            out.append(
                DcgmMessage(
                    "warning",
                    prefix + text,
                    gpu if gpu is not None else gpu_in_message(text),
                    entity,
                    _int(w.get("error_id")),
                    _int(w.get("error_category")),
                    _int(w.get("error_severity")),
                )
            )
    info = result.get("info")
    for item in [info] if isinstance(info, str) else info or []:
        text = str(item).strip()
        if text:
            out.append(DcgmMessage("info", prefix + text, gpu if gpu is not None else gpu_in_message(text), entity))
    return out


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _str(value: Any) -> str | None:
    return str(value).strip() if value not in (None, "") else None


def _serial(value: Any) -> str | None:
    text = _str(value)
    return None if text is None or text in _NOT_A_SERIAL else text
