"""nccl-tests' own JSON report (`-J file`, 2.17.3+; shape from nccl-tests src/util.cu).

The writer emits one line, closes the document only at exit, writes NaN as "nan",
booleans as the strings "true"/"false" and `root` as a `%6i`-padded string. A
document cut short (the process died) is closed at its last complete member and
read as an incomplete run. A result holding `nan`/`inf` is an error of the run (failed),
one holding a negative figure an unreadable result (incomplete): neither is handed on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from acceptance.errors import ParseError
from acceptance.tools.nccl.checks import Entry, sweep_problems, wrong_na_problem
from acceptance.tools.nccl.names import collective_of, decode_nccl_code, normalize_collective
from acceptance.tools.nccl.records import (
    NcclCapture,
    NcclError,
    NcclHalf,
    NcclRank,
    NcclRow,
    NcclRun,
    RunStatus,
    capture_status,
)

_PER_ITER = {"min_us": "i_min_us", "max_us": "i_max_us", "p99_us": "i_p99_us", "cv_pct": "i_cv_pct"}
_CONFIG = {
    "nthreads": "nthreads",
    "ngpus": "ngpus",
    "minimum_bytes": "min_bytes",
    "maximum_bytes": "max_bytes",
    "step_factor": "step_factor",
    "step_bytes": "step_bytes",
    "warmup_iters": "warmup_iters",
    "iterations": "iters",
    "aggregated_iterations": "agg_iters",
    "validation": "validation",
    "graph": "graph",
}


def _close_truncated(text: str) -> str | None:
    """The longest prefix cut at a top-level-safe comma, with its brackets closed; None if none."""
    stack: list[str] = []
    in_string = escaped = False
    best: str | None = None
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == "," and stack:
            best = text[:i] + "".join(reversed(stack))
    return best


def _float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        return float("nan") if value.strip().lower() == "nan" else float(value)
    return float(value)


def _half(doc: Mapping[str, Any] | None, per_iter: Mapping[str, Any] | None) -> NcclHalf | None:
    if doc is None:
        return None
    extras: dict[str, float | None] = {}
    if per_iter:
        extras = {ours: _float(per_iter.get(theirs)) for theirs, ours in _PER_ITER.items()}
    if isinstance(doc.get("bitwise"), Mapping):
        extras["bitdiff"] = _float(doc["bitwise"].get("different_bits"))
    time = doc.get("time", doc.get("cpu_time"))
    return NcclHalf(
        _float(time), _float(doc.get("alg_bw")), _float(doc.get("bus_bw")), _float(doc.get("nwrong")), extras
    )


def _bad_values(row: NcclRow) -> tuple[str, bool] | None:
    """(what is wrong, whether it is a non-finite value) for a result that must not be handed on."""
    for name, half in (("out_of_place", row.oop), ("in_place", row.ip)):
        if half is None:
            continue
        values = {"time": half.time_us, "alg_bw": half.algbw, "bus_bw": half.busbw, "nwrong": half.wrong}
        values.update(half.extras)
        for key, value in values.items():
            if value is None:
                if key in ("time", "alg_bw", "bus_bw"):
                    return f"{name}.{key} is null where a measurement belongs", False
                continue
            if not math.isfinite(value):
                return f"{name}.{key} is {value}", True
            if value < 0:
                return f"{name}.{key} is negative ({value})", False
    if row.size < 0 or row.count < 0:
        return f"size {row.size} / count {row.count}", False
    return None


def _row(doc: Mapping[str, Any]) -> NcclRow:
    root = doc.get("root")
    return NcclRow(
        size=int(doc["size"]),
        count=int(doc["count"]),
        type=str(doc["type"]),
        redop=doc.get("redop"),
        root=None if root is None else int(str(root).strip()),
        oop=_half(doc.get("out_of_place"), doc.get("out_of_place_per_iter")),
        ip=_half(doc.get("in_place"), doc.get("in_place_per_iter")),
    )


def parse_json_report(text: str, source: str = "<text>", collective: str | None = None) -> NcclCapture:
    truncated = False
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ParseError(source, 1, text[:80], "an nccl-tests -J JSON document (this one nests too deeply)") from None
    except json.JSONDecodeError as exc:
        repaired = _close_truncated(text)
        try:
            doc = json.loads(repaired) if repaired else None
        except (json.JSONDecodeError, RecursionError):
            doc = None
        if doc is None:
            raise ParseError(source, exc.lineno, text[:80], "an nccl-tests -J JSON document") from None
        truncated = True
    if not isinstance(doc, dict) or not ({"config", "results", "nccl_version"} & doc.keys()):
        raise ParseError(source, 1, text[:80], "an nccl-tests -J JSON document (config, results, nccl_version)")
    try:
        return _capture(doc, truncated, source, collective)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ParseError(source, 1, str(exc), "the fields nccl-tests writes in its -J report") from None


def _capture(doc: Mapping[str, Any], truncated: bool, source: str, collective: str | None) -> NcclCapture:
    args = [str(a) for a in doc.get("args", [])]
    program = args[0].rsplit("/", 1)[-1] if args else None
    config = doc.get("config") or {}
    params: dict[str, Any] = {ours: config[theirs] for theirs, ours in _CONFIG.items() if theirs in config}
    if args:
        params["argv"] = args
    name = collective_of(program) if program else None
    origin = "output" if name else None
    if name is None and collective:
        name, origin = normalize_collective(collective), "caller"
    params["collective_from"] = origin
    if program:
        params["program"] = program
    ranks = tuple(
        NcclRank(
            int(d["rank"]),
            str(d["hostname"]),
            int(d["device"]),
            str(d.get("device_hex", "")),
            str(d.get("device_info", "")),
            None if d.get("pid") is None else int(d["pid"]),
        )
        for d in config.get("devices", [])
    )
    results = doc.get("results", [])
    if not isinstance(results, list) or not all(isinstance(r, Mapping) for r in results):
        raise TypeError("results: expected a list of objects")
    if truncated:  # the last result may be cut inside its object
        results = [r for r in results if {"size", "count", "type", "in_place"} <= r.keys()]
    kept: list[NcclRow] = []
    errors = [NcclError(1, str(e), kind="nccl") for e in doc.get("errors", []) if str(e).strip()]
    failed = malformed = False
    read: list[NcclRow] = []  # every result, kept or not: the sweep's rows
    for i, result in enumerate(results):
        row = _row(result)
        read.append(row)
        bad = _bad_values(row)
        if bad is None:
            kept.append(row)
            continue
        what, non_finite = bad
        failed, malformed = failed or non_finite, malformed or not non_finite
        errors.append(NcclError(1, f"results[{i}] (size {row.size}): {what}", kind="output"))
    rows = tuple(kept)
    entries = [
        Entry(
            i,
            r.size,
            r.type,
            r.redop,
            r.root,
            r.oop is not None and r.oop.wrong is None,
            r.ip is not None and r.ip.wrong is None,
        )
        for i, r in enumerate(read)
    ]
    validation = params.get("validation")
    for entry in entries:
        why = wrong_na_problem(entry, validation if isinstance(validation, int) else None, name)
        if why is not None:
            errors.append(NcclError(1, f"results[{entry.line}] (size {entry.size}): {why}", kind="output"))
            malformed = True
    for at, text in sweep_problems(entries, params, name, len(ranks) or None):
        errors.append(NcclError(1, f"results[{at}]: {text}", kind="output"))
        malformed = True
    oob_doc = doc.get("out_of_bounds")
    avg_doc = doc.get("average_bus_bandwidth")
    oob = int(oob_doc["count"]) if isinstance(oob_doc, Mapping) else None
    avg = _float(avg_doc.get("bandwidth")) if isinstance(avg_doc, Mapping) else None
    if avg is not None and not (math.isfinite(avg) and avg >= 0):
        errors.append(NcclError(1, f"average_bus_bandwidth is {avg}", kind="output"))
        avg, malformed = None, True
    wrong = [r for r in rows for h in (r.oop, r.ip) if h is not None and h.wrong]
    for r in wrong:
        errors.append(NcclError(1, f"nwrong > 0 at size {r.size} ({r.type})", kind="output"))
    status: RunStatus = "ok"
    if failed or wrong or (oob or 0) > 0 or (isinstance(avg_doc, Mapping) and avg_doc.get("okay") in (False, "false")):
        status = "failed"
    elif truncated or malformed or oob_doc is None or avg is None or not rows:
        status = "incomplete"
    code = doc.get("nccl_version")
    run = NcclRun(
        collective=name,
        nccl_tests_version=None,
        nccl_version=decode_nccl_code(int(code)) if code else None,
        cuda_version=None,
        ranks=ranks,
        params=params,
        rows=rows,
        avg_busbw=avg,
        out_of_bounds=oob,
        status=status,
        errors=tuple(errors),
    )
    return NcclCapture(capture_status((run.status,), (), False), (run,), (), source)
