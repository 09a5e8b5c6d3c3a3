"""Verdict figures and suite provenance as junit `<property>` elements; `record_verdict` keeps an item's
verdict for the report and writes its figures (a `Margin` as two properties) in one step.

pytest's `--junitxml` writes a test item's `user_properties` as `<property>`
children of its `<testcase>`, and the LogXML object's global properties as
`<property>` children of `<testsuite>`. The plugin appends to
`item.user_properties` directly (the `record_property` fixture warns under the
default `junit_family=xunit2`), and adds suite properties on the controller
process, where LogXML lives (under pytest-xdist the `record_testsuite_property`
fixture is a no-op in workers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from acceptance.judge.verdict import Status, Verdict

#: the verdicts an item recorded, kept for the report (`reporting_plugin.on_makereport` reads them)
VERDICTS_KEY = pytest.StashKey[list[Verdict]]()

# Rows of a verdict's table carried as properties; a bigger table is summarised.
MAX_TABLE_ROWS = 200


def format_figure(value: Any) -> str:
    """A figure as junit text: booleans lower case, floats without noise, None empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if value != int(value) or abs(value) >= 1e16 else str(int(value))
    if hasattr(value, "item"):  # numpy scalar
        return format_figure(value.item())
    return str(value)


def table_rows(verdict: Verdict) -> list[dict[str, Any]]:
    """The verdict's table as plain row dicts (empty when there is none)."""
    if verdict.table is None:
        return []
    frame = verdict.table.reset_index(drop=not _named_index(verdict))
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _named_index(verdict: Verdict) -> bool:
    table = verdict.table
    return table is not None and any(name is not None for name in table.index.names)


def verdict_properties(verdict: Verdict, *, include_table: bool = True) -> list[tuple[str, str]]:
    """Every figure the verdict used, as (name, value) pairs for `item.user_properties`.

    Order: `verdict` (status), `subject`, `summary`, the figures in their order (the margin as
    ``margin`` and ``margin_direction``), then
    one `row.N` property per table row (`col=value col=value ...`), so per-size
    busbw or per-GPU results reach junit consumers too.
    """
    props = [
        ("verdict", verdict.status.value),
        ("subject", verdict.subject),
        ("summary", verdict.summary),
    ]
    props.extend((str(name), format_figure(value)) for name, value in verdict.flat_figures().items())
    plot_only = verdict.table is not None and bool(verdict.table.attrs.get("plot_only"))
    if include_table and plot_only:  # per-step series for plots: the figures already say what was judged
        assert verdict.table is not None
        props.append(("rows.plot_only", str(len(verdict.table))))
    elif include_table:
        rows = table_rows(verdict)
        for index, row in enumerate(rows[:MAX_TABLE_ROWS]):
            text = " ".join(f"{col}={format_figure(value)}" for col, value in row.items())
            props.append((f"row.{index}", text))
        if len(rows) > MAX_TABLE_ROWS:
            props.append(("rows.omitted", str(len(rows) - MAX_TABLE_ROWS)))
    return props


def record_verdict(item: pytest.Item, verdict: Verdict) -> None:
    """Keep a verdict for the report and write its figures as junit properties of `item`.

    Appends to `item.user_properties` directly: the `record_property` fixture warns
    under pytest's default `junit_family=xunit2`.
    """
    item.stash.setdefault(VERDICTS_KEY, []).append(verdict)
    item.user_properties.extend(verdict_properties(verdict))


def record_error(item: pytest.Item, error: BaseException) -> None:
    """An item that ended on a foreseeable error (an API failure, a deadline) before giving a verdict:
    an ERROR verdict naming it, so that every item carries one (it could not be judged, it did not fail)."""
    if item.stash.get(VERDICTS_KEY, []):
        return
    record_verdict(item, Verdict(Status.ERROR, item.name, f"{item.name}: cannot judge: {error}"))


def suite_properties(provenance: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Flatten provenance (nested mappings become dotted names) into suite property pairs."""
    props: list[tuple[str, str]] = []
    for key, value in provenance.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            props.extend(suite_properties(value, prefix=name + "."))
        elif isinstance(value, list | tuple):
            props.append((name, ",".join(format_figure(v) for v in value)))
        else:
            props.append((name, format_figure(value)))
    return props


def add_suite_properties(config: pytest.Config, provenance: Mapping[str, Any]) -> bool:
    """Add suite properties to the junit file being written; False when there is none here.

    Call on the controller (not in xdist workers) before LogXML.pytest_sessionfinish
    writes the file, e.g. in `pytest_sessionstart` and again, for the end time, in a
    `pytest_sessionfinish` hook wrapper before its `yield`.
    """
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return False
    for name, value in suite_properties(provenance):
        xml.add_global_property(name, value)
    return True


def junit_path(config: pytest.Config) -> Path | None:
    """The absolute path pytest's junitxml plugin writes in this process (None: none here)."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    return Path(xml.logfile) if xml is not None else None


def ensure_junit(config: pytest.Config, default_path: Path) -> Path | None:
    """Make pytest's own junitxml plugin write `default_path` when `--junitxml` was not given.

    Call from `pytest_configure` on the controller (returns None in xdist workers).
    Mirrors `_pytest.junitxml.pytest_configure`; its `pytest_unconfigure` cleans up.
    """
    if hasattr(config, "workerinput"):
        return None
    existing = junit_path(config)
    if existing is not None:
        return existing
    from _pytest.junitxml import LogXML, xml_key

    xml = LogXML(
        str(default_path),
        config.option.junitprefix,
        config.getini("junit_suite_name"),
        config.getini("junit_logging"),
        config.getini("junit_duration_report"),
        config.getini("junit_family"),
        config.getini("junit_log_passing_tests"),
    )
    config.stash[xml_key] = xml
    config.pluginmanager.register(xml)
    return Path(xml.logfile)
