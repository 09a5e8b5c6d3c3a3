"""report.html in a real headless Chromium: the banner is the colour of the verdict, at 16 and at 1024 nodes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acceptance.report.banner import COLORS
from acceptance.report.data import ReportData, TestRecord
from acceptance.report.decision import Banner, decide
from acceptance.report.heatmap_html import CSS as HEATMAP_CSS
from acceptance.report.html import render_html
from tests.browser import CHROMIUM, colour_pixels, dominant, hex_rgb, png_size, screenshot, top_rows
from tests.report_scale import evidence_files, scale_report
from tests.suite_run import run_suite

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")

WIDTH, HEIGHT = 1280, 2400
BANNER_ROWS = range(4, 40)  # inside the banner at any verdict: its word alone is 2.2em high plus padding
FAIL_CELL = hex_rgb(re.search(r"\.hm>\.fail,[^{]*\{background:(#[0-9a-f]{6})", HEATMAP_CSS).group(1))  # type: ignore[union-attr]


def shoot(html_path: Path, tmp_path: Path, width: int = WIDTH, height: int = HEIGHT) -> bytes:
    shot = tmp_path / f"{html_path.stem}.png"
    done = screenshot(html_path, shot, width, height, tmp_path / "chromium-profile")
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.is_file()
    return shot.read_bytes()


def banner_colour(png: bytes) -> tuple[tuple[int, int, int], float]:
    rows = top_rows(png, BANNER_ROWS.stop)[BANNER_ROWS.start :]
    return dominant(rows)


def fail_cell_pixels(png: bytes) -> int:
    """Pixels of a failing heatmap cell's colour anywhere in the screenshot."""
    return colour_pixels(png, FAIL_CELL, 3)


def assert_not_accepted_first_screen(png: bytes, why: str) -> None:
    """The screenshot is full size, opens on the NOT ACCEPTED banner and shows a failing heatmap cell."""
    assert png_size(png) == (WIDTH, HEIGHT)
    colour, share = banner_colour(png)
    assert colour == hex_rgb(COLORS[Banner.NOT_ACCEPTED])
    assert share > 0.6
    assert fail_cell_pixels(png) >= 20, why


def record(module: str, outcome: str, status: str, summary: str, reason: str = "") -> TestRecord:
    verdict = {"status": status, "subject": module, "summary": summary, "figures": {}, "evidence": [], "table": {}}
    return TestRecord(f"acceptance/{module}.py::test_x", outcome, 0.0, reason, (verdict,))


ACCEPTANCE = ("test_preflight", "test_gpu_diagnostics", "test_fabric", "test_smoke_step", "test_loss_continuity")
SMALL = {
    Banner.ACCEPTED: ReportData({}, tuple(record(m, "passed", "pass", "ok") for m in ACCEPTANCE)),
    Banner.NOT_ACCEPTED: ReportData({}, (record("test_fabric", "failed", "not-comparable", "nccl 2.21 vs 2.26"),)),
    Banner.PENDING: ReportData({}, (record("test_recurrence", "skipped", "pending", "6h of 1d", "PENDING: 6h"),)),
}


@pytest.mark.heavy
@pytest.mark.parametrize("banner", list(Banner), ids=lambda b: b.css)
def test_the_banner_is_the_colour_of_its_verdict(banner: Banner, tmp_path: Path) -> None:
    data = SMALL[banner]
    assert decide(data).banner is banner
    page = tmp_path / "report.html"
    page.write_text(render_html(data, signing="unsigned", signed=False))
    png = shoot(page, tmp_path, 1000, 400)
    assert png_size(png) == (1000, 400)
    colour, share = banner_colour(png)
    assert colour == hex_rgb(COLORS[banner])
    assert share > 0.6


def _verdict_section(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "acceptance verdicts" in line and line.startswith("="))
    return [line for line in lines[start + 1 :] if line.strip()]


@pytest.mark.slow
def test_a_failing_16_node_run_opens_with_not_accepted(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """XID 79 on sim-node-03: the report, the terminal and the screenshot all lead with NOT ACCEPTED."""
    run = run_suite(pytester, "--sim-fault=gpu-xid@sim-node-03:5")
    assert run.result.ret == 1
    stdout = run.result.stdout.str()
    section = _verdict_section(stdout)
    verdict_line = section[0]
    assert verdict_line == "NOT ACCEPTED: 7 items failed (criteria 1, 2, 3, 4)"
    assert stdout.index("acceptance verdicts") < stdout.index("recovery acceptance report"), "the verdict leads"

    page = run.report_dir / "report.html"
    html = page.read_text()
    word, why = re.search(r'<div class="word">([^<]+)</div><div class="why">([^<]*)</div>', html).groups()  # type: ignore[union-attr]
    assert f"{word}: {why}" == verdict_line, "the report and the terminal say the same"
    assert html.index('id="verdict"') < html.index("SIMULATED") < html.index('class="cause"')
    assert "sim-node-03 GPU 5: software failed (XID 79" in html
    assert "15/16 nodes passed DCGM r3" in html
    assert "4/4 preflight checks passed" in html
    assert '<a class="fail" href="outputs/dcgm/sim-node-03.log" title="sim-node-03: fail: GPU 5">03</a>' in html
    hrefs = set(re.findall(r'href="([^"#]+)"', html))
    assert "outputs/dcgm/sim-node-03.log" in hrefs
    assert "outputs/nccl/all_reduce_perf.log" in hrefs
    missing = [h for h in hrefs if not (run.report_dir / h).is_file()]
    assert missing == [], "every evidence link is a file of the report folder"

    png = shoot(page, tmp_path)
    assert_not_accepted_first_screen(png, "sim-node-03's heatmap cells are on the first screen")
    print(f"16 nodes: report.html {len(html.encode()):,} bytes; screenshot {WIDTH}x{HEIGHT}, {len(png):,} bytes")


@pytest.mark.heavy
def test_a_1024_node_report_stays_small_and_renders_in_chromium(tmp_path: Path) -> None:
    """Three bad GPUs among 8192: the heatmap shows them on the first screen; the page stays under 2 MB."""
    faults = ["gpu-xid@sim-node-0005:2", "gpu-throttle@sim-node-0700:3", "ecc-dbe@sim-node-1000:6"]
    data = scale_report(1024, faults)
    html = render_html(data, signing="unsigned", signed=False, files=evidence_files(1024))
    size = len(html.encode())
    assert size < 2_000_000
    assert "1021/1024 nodes passed DCGM r3" in html
    page = tmp_path / "report.html"
    page.write_text(html)

    png = shoot(page, tmp_path)  # within browser.TIMEOUT_S
    assert_not_accepted_first_screen(png, "a failing heatmap cell is on the first screen")
    print(f"1024 nodes: report.html {size:,} bytes; screenshot {WIDTH}x{HEIGHT}, {len(png):,} bytes")
