"""How the pieces a parser found become one report: statuses folded, per-GPU results, identities."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from acceptance.tools.dcgm.model import (
    ERROR,
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
from acceptance.tools.dcgm.names import SOFTWARE

_RUN_RANK = {PASS: 0, SKIP: 1, WARN: 2, FAIL: 3}
_CHECK_RANK = {SKIP: 0, PASS: 1, WARN: 2, FAIL: 3}


def worst_of_runs(statuses: Iterable[str]) -> str:
    """Status of one test seen several times (iterations, a report printed twice): a skip beats a pass."""
    return max(statuses, key=lambda s: _RUN_RANK[s], default=SKIP)


def worst_of_checks(statuses: Iterable[str]) -> str:
    """Status of checks folded into one test (3.x deployment rows into `software`)."""
    return max(statuses, key=lambda s: _CHECK_RANK[s], default=SKIP)


def build_report(
    fmt: str,
    tests: Iterable[DcgmTest],
    *,
    errors: Iterable[ReportError] = (),
    dcgm_version: str | None = None,
    driver_version: str | None = None,
    devices: Mapping[int, GpuDevice] | None = None,
    failed: bool = False,
) -> DcgmReport:
    """Assemble a report: per-GPU overall status and the run's status from its tests.

    `failed` marks a run the tool itself called failed (e.g. ``"Overall Result": "Fail"``).
    A run whose every test beyond the software checks was skipped is `skip`, never `pass`.
    A test with a failed entity row fails whatever its summary says (`rows_decide`).
    """
    tests = tuple(rows_decide(t) for t in tests)
    errors = tuple(errors)
    per_gpu: dict[int, list[str]] = {}
    for t in tests:
        for gpu, status in t.gpus.items():
            per_gpu.setdefault(gpu, []).append(status)
    gpus = {g: _gpu_overall(s) for g, s in sorted(per_gpu.items())}
    exercised = [t for t in tests if t.name != SOFTWARE]
    if any(t.status == FAIL for t in tests):
        status = FAIL
    elif errors or not tests:
        status = ERROR
    elif failed:
        status = FAIL
    elif exercised and all(t.status == SKIP for t in exercised):
        status = SKIP  # nothing beyond the software checks ran: not a pass
    else:
        status = PASS
    return DcgmReport(
        format=fmt,
        status=status,
        tests=tests,
        gpus=gpus,
        errors=errors,
        dcgm_version=dcgm_version,
        driver_version=driver_version,
        devices=_identities(tests, dict(devices or {})),
    )


def rows_decide(test: DcgmTest) -> DcgmTest:
    """A failed GPU or other entity fails its test, whatever DCGM's summary of the test says.

    The summary DCGM printed is kept in `summary` when it disagrees (a Pass over a failed
    row), so the evidence can say so.
    """
    if test.status == FAIL or not test.failed_rows():
        return test
    return replace(test, status=FAIL, summary=test.summary or test.status)


_BUS_ID = re.compile(r"GPU (\d+), bus ID = ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_UUID = re.compile(r"\b(GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})\b")


def _identities(tests: tuple[DcgmTest, ...], devices: dict[int, GpuDevice]) -> dict[int, GpuDevice]:
    """Add the PCI bus ids and UUIDs that messages state (``for GPU 0, bus ID = 00000000:1B:00.0``)."""
    for test in tests:
        for m in test.messages:
            for gpu, bus in _BUS_ID.findall(m.text):
                device = devices.get(int(gpu), GpuDevice())
                devices[int(gpu)] = replace(device, pci_bus_id=device.pci_bus_id or bus)
            uuid = _UUID.search(m.text)
            if uuid and m.gpu is not None:
                device = devices.get(m.gpu, GpuDevice())
                devices[m.gpu] = replace(device, uuid=device.uuid or uuid.group(1))
    return dict(sorted(devices.items()))


def _gpu_overall(statuses: list[str]) -> str:
    if FAIL in statuses:
        return FAIL
    if PASS in statuses or WARN in statuses:
        return PASS
    return SKIP


def merge_tests(
    tests: Iterable[DcgmTest], combine: Callable[[Iterable[str]], str] = worst_of_runs
) -> tuple[DcgmTest, ...]:
    """Fold tests of the same name into one each, in first-seen order.

    `combine` decides the status: `worst_of_runs` for the same test seen twice
    (iterations, a report printed twice), `worst_of_checks` for 3.x deployment rows
    folded into `software`.
    """
    order: list[str] = []
    groups: dict[str, list[DcgmTest]] = {}
    for t in tests:
        if t.name not in groups:
            order.append(t.name)
        groups.setdefault(t.name, []).append(t)
    merged = []
    for name in order:
        group = groups[name]
        if len(group) == 1:
            merged.append(group[0])
            continue
        gpus: dict[int, list[str]] = {}
        entities: dict[str, list[str]] = {}
        messages: list[DcgmMessage] = []
        for t in group:
            for g, s in t.gpus.items():
                gpus.setdefault(g, []).append(s)
            for e, s in t.entities.items():
                entities.setdefault(e, []).append(s)
            messages.extend(m for m in t.messages if m not in messages)
        summaries = [t.summary for t in group if t.summary is not None]
        merged.append(
            DcgmTest(
                name=name,
                category=group[0].category,
                status=combine(t.status for t in group),
                gpus={g: combine(s) for g, s in sorted(gpus.items())},
                messages=tuple(messages),
                entities={e: combine(s) for e, s in sorted(entities.items())},
                summary=summaries[0] if summaries else None,
            )
        )
    return tuple(merged)
