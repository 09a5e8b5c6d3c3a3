"""The HTML report: every section drawn or marked "not run", self-contained, and it renders in Chromium."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from acceptance.judge.verdict import Status, Verdict
from acceptance.report.data import ReportData, TestRecord, verdict_payload
from acceptance.report.finalize import finalize
from acceptance.report.folder import ReportFolder
from acceptance.report.html import render_html
from acceptance.report.sign import SignOptions
from tests.browser import CHROMIUM, colour_pixels, pixels, screenshot

SIZES = [1 << k for k in range(10, 31, 2)]


def _full_data(simulated: bool = True) -> ReportData:
    rng = np.random.default_rng(7)
    base = [min(s / (1 << 22), 1.0) * 380 for s in SIZES]
    fabric = Verdict(
        Status.FAIL,
        "all_reduce_perf",
        "busbw 9% below baseline at 256 MiB (345 vs 380 GB/s, margin 5%)",
        {"collective": "all_reduce", "margin": 0.05, "worst_size": 1 << 28, "ratio": 0.91, "unit": "GB/s"},
        ("256 MiB: 345.0 < 361.0",),
        pd.DataFrame({"size": SIZES, "busbw_now": [b * 0.97 for b in base], "busbw_baseline": base}),
    )
    rows = [
        {"node": n, "gpu": g, "test": t, "status": "fail" if (n, g, t) == ("gpu-07", 3, "pcie") else "pass"}
        for n in ("gpu-07", "gpu-02")
        for g in range(8)
        for t in ("software", "pcie", "memory_bandwidth", "targeted_power")
    ]
    dcgm = Verdict(Status.FAIL, "gpu-07", "GPU 3 fails pcie on gpu-07", {"node": "gpu-07"}, (), pd.DataFrame(rows))
    base_t, smoke_t = rng.normal(1.0, 0.02, 120), rng.normal(1.01, 0.02, 60)
    base_t[:3], smoke_t[:3] = 3.0, 3.0  # warm-up, dropped
    step = Verdict(
        Status.PASS,
        "smoke",
        "median step time 1.01x baseline, CI [0.99, 1.03], margin 5%",
        {"ratio": 1.01, "margin": 0.05, "baseline_median": 1.0, "smoke_median": 1.01, "unit": "s"},
        (),
        pd.DataFrame(
            {
                "series": ["smoke"] * 60 + ["baseline"] * 120,
                "step": [*range(60), *range(120)],
                "step_time": [*smoke_t, *base_t],
                "kept": [i >= 3 for i in range(60)] + [i >= 3 for i in range(120)],
            }
        ),
    )
    steps = np.arange(700, 1200)
    trend = 2.4 - steps * 2e-4
    loss = Verdict(
        Status.PASS,
        "loss",
        "no jump after restore at step 1000",
        {"restore_step": 1000, "sigma": 0.01, "space": "loss", "spike_z": 6.0, "shift_z": 3.0},
        (),
        pd.DataFrame(
            {
                "phase": np.where(steps <= 1000, "before", "after"),
                "step": steps,
                "loss": trend + rng.normal(0, 0.01, steps.size),
                "trend": trend,
                "z": np.where(steps <= 1050, rng.normal(0, 1, steps.size), np.nan),
            }
        ),
    )
    hours = np.arange(0, 6, 0.1)
    probation = Verdict(
        Status.PENDING,
        "probation",
        "probation window not reached: 6h of 1d elapsed, 18h to go",
        {
            "window_s": 86400,
            "elapsed_s": 21600,
            "nodes": "gpu-07",
            "gpus_expected": 8,
            "limit.step_time_ratio": 1.1,
            "window_start": "2026-11-30T00:20Z",
        },
        (),
        pd.DataFrame(
            {
                "probation_signal": ["GPUs reporting"] * hours.size + ["step time / baseline"] * hours.size,
                "hours": np.concatenate([hours, hours]),
                "value": np.concatenate([np.full(hours.size, 8.0), 1 + rng.normal(0, 0.01, hours.size)]),
            }
        ),
    )
    tests = (
        TestRecord("acceptance/test_preflight.py::test_nodes_ready", "passed", 0.2, "", ()),
        TestRecord(
            "acceptance/test_gpu_diagnostics.py::test_dcgm[gpu-07]",
            "failed",
            3.0,
            "",
            (verdict_payload(dcgm),),
        ),
        TestRecord(
            "acceptance/test_fabric.py::test_fabric[all_reduce_perf]",
            "failed",
            9.0,
            "",
            (verdict_payload(fabric),),
        ),
        TestRecord("acceptance/test_smoke_step.py::test_step_time", "passed", 30.0, "", (verdict_payload(step),)),
        TestRecord("acceptance/test_loss_continuity.py::test_loss", "passed", 0.5, "", (verdict_payload(loss),)),
        TestRecord(
            "acceptance/test_recurrence.py::test_probation",
            "skipped",
            0.0,
            "PENDING: probation window not reached",
            (verdict_payload(probation),),
        ),
    )
    provenance = {
        "cluster": "sim",
        "ticket": "INC-1234",
        "start_utc": "2026-11-30T00:00:00+00:00",
        "end_utc": "2026-11-30T00:20:00+00:00",
        "baseline": {"file": "baselines/sim/handover-20261101T000000Z.json", "sha256": "ab" * 32},
        "conditions": {"nccl": "2.21.5", "cuda": "12.4", "dcgm": "4.1.1"},
    }
    return ReportData(provenance, tests, simulated)


def _images(html: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', html)]


def _distinct_colors(png: bytes) -> int:
    flat = pixels(png).reshape(-1, 3)
    packed = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]  # one int per colour: np.unique(axis=0) took 0.7 s
    return len(np.unique(packed))


@pytest.fixture(scope="module")
def full_html() -> str:
    """The page of `_full_data`, drawn once for the tests that read it (drawing its plots takes about 1.2 s)."""
    files = ["junit.xml", "evidence/a b.txt"]
    return render_html(_full_data(), signing="signed by key k (SHA256:x)", signed=True, files=files)


def test_every_section_is_drawn_from_verdict_tables(full_html: str) -> None:
    html = full_html
    images = _images(html)
    assert len(images) == 4  # busbw, step time, loss, probation
    for png in images:
        assert png.startswith(b"\x89PNG")
        assert _distinct_colors(png) > 20
    assert "SIMULATED" in html
    assert '<td class="fail">fail: GPU 3; pass ×7</td>' in html  # the DCGM matrix cell of gpu-07 pcie
    assert html.count("<tr><td>gpu-07</td>") == 1  # one row per node
    assert "busbw 9% below baseline at 256 MiB" in html
    assert "5. no recurrence during probation" in html
    assert "probation window not reached" in html
    assert "not run" not in html
    assert "INC-1234" in html
    assert "ab" * 32 in html


def test_sections_without_data_say_not_run_and_no_banner_for_real_clusters():
    data = ReportData({"cluster": "prod-h200"}, (), simulated=False)
    html = render_html(data, signing="unsigned: signing was turned off with --no-sign", signed=False)
    assert html.count("not run") == 5
    assert "SIMULATED" not in html
    assert "No test ran." in html
    assert 'class="unsigned"' in html


def test_the_page_is_self_contained(full_html: str) -> None:
    html = full_html
    assert '<a href="evidence/a b.txt">' in html  # the report's own files are relative links, nothing fetched
    assert "<script" not in html
    assert "<link" not in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "default-src 'none'" in html


def test_html_escapes_what_it_shows():
    verdict = Verdict(Status.FAIL, "<b>x</b>", "a <script>alert(1)</script> summary")
    data = ReportData({"cluster": "<i>c</i>"}, (TestRecord("t.py::x", "failed", 0, "", (verdict_payload(verdict),)),))
    html = render_html(data, signing="s", signed=False)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")


def _chromium(page: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """Screenshot `page` headless; return the PNG and the page's console messages."""
    shot = tmp_path / "shot.png"
    done = screenshot(page, shot, 1200, 2400, tmp_path / "profile", ["--enable-logging=stderr", "--v=0"])
    console = [line for line in (done.stderr + done.stdout).splitlines() if ":CONSOLE" in line]
    assert done.returncode == 0, done.stderr[-2000:]
    return shot, console


@pytest.mark.heavy
@needs_chromium
def test_console_errors_are_detected(tmp_path: Path):
    """Control: the detector used below does see a page's console errors."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); missingFunction();</script></body></html>")
    _shot, console = _chromium(page, tmp_path)
    assert any("boom" in line for line in console)
    assert any("missingFunction" in line for line in console)


@pytest.mark.heavy
@needs_chromium
def test_report_opens_in_headless_chromium_without_console_errors(tmp_path: Path):
    folder = ReportFolder.create(tmp_path / "reports", "sim", pd.Timestamp("2026-11-30T00:00:00Z").to_pydatetime())
    result = finalize(folder, None, _full_data(), SignOptions(enabled=False))
    assert result.html is not None
    shot, console = _chromium(result.html, tmp_path)
    assert console == []
    assert shot.stat().st_size > 10_000
    assert _distinct_colors(shot.read_bytes()) > 200  # text, plots and coloured cells, not a blank page


def test_plots_read_the_tables_the_real_judges_make():
    """Contract with judge/steptime.py and judge/diagnostics.py: their tables are what the page draws."""
    from acceptance.judge.steptime import judge_steptime
    from acceptance.report.plots import diagnostics_matrix
    from acceptance.report.plots_training import steptime_plot

    rng = np.random.default_rng(3)
    verdict = judge_steptime(pd.Series(rng.normal(1.0, 0.02, 200)), pd.Series(rng.normal(1.01, 0.02, 120)))
    assert steptime_plot([verdict_payload(verdict)]) is not None
    dcgm = Verdict(
        Status.PASS,
        "gpu-01",
        "ok",
        table=pd.DataFrame(
            [("gpu-01", 0, "pcie", "pass", "pass")], columns=["node", "gpu", "test", "status", "handover"]
        ),
    )
    tests, rows, cells = diagnostics_matrix([verdict_payload(dcgm)])
    assert (tests, rows, cells) == (["pcie"], [("gpu-01", "0")], {("gpu-01", "0", "pcie"): "pass"})


_RED = np.array([0xC0, 0x39, 0x2B])


def _has_color(png: bytes, rgb: np.ndarray = _RED, min_pixels: int = 30) -> bool:
    return colour_pixels(png, rgb, 6) >= min_pixels


def test_step_time_plot_draws_both_series_and_the_margin_line():
    from acceptance.report.plots_training import steptime_plot

    (step,) = [v for t in _full_data().tests for v in t.verdicts if t.nodeid.startswith("acceptance/test_smoke")]
    with_margin = _images(f'<img src="{steptime_plot([step])}">')[0]
    assert _has_color(with_margin)  # the (1 + margin) × baseline median line
    figures = {k: v for k, v in step["figures"].items() if k != "margin"}
    without = _images(f'<img src="{steptime_plot([{**step, "figures": figures}])}">')[0]
    assert not _has_color(without)
    smoke_only = {**step, "table": {**step["table"], "rows": [r for r in step["table"]["rows"] if r[0] == "smoke"]}}
    assert steptime_plot([smoke_only]) is not None
    empty = {**step, "table": {"columns": step["table"]["columns"], "rows": []}}
    assert steptime_plot([empty]) is None


def test_loss_plot_marks_the_restore_and_needs_only_step_and_loss():
    from acceptance.report.plots_training import loss_plot

    (loss,) = [v for t in _full_data().tests for v in t.verdicts if t.nodeid.startswith("acceptance/test_loss")]
    marked = _images(f'<img src="{loss_plot([loss])}">')[0]
    assert _has_color(marked)  # restore line and z limits
    bare_rows = [[r[1], r[2]] for r in loss["table"]["rows"]]
    bare = {"figures": {}, "table": {"columns": ["step", "loss"], "rows": bare_rows}}
    png = _images(f'<img src="{loss_plot([bare])}">')[0]
    assert not _has_color(png)
    assert loss_plot([{"figures": {}, "table": {"columns": ["step", "loss"], "rows": []}}]) is None


def test_diagnostics_matrix_is_one_row_per_node_naming_the_gpus_that_did_not_pass():
    from acceptance.report.html import _diagnostics

    rows = [("n1", gpu, "pcie", "pass", "pass") for gpu in range(8)]
    rows += [("n2", gpu, "pcie", "fail" if gpu == 5 else "pass", "pass") for gpu in range(8)]
    table = pd.DataFrame(rows, columns=["node", "gpu", "test", "status", "handover"])
    html = _diagnostics([verdict_payload(Verdict(Status.FAIL, "n2", "x", table=table))])
    assert html.count("<tr>") == 3  # header + one row per node
    assert '<td class="pass">pass ×8</td>' in html
    assert '<td class="fail">fail: GPU 5; pass ×7</td>' in html
