"""The rendered agreement in a real browser: every section is on the page Chromium draws, and it prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acceptance.cli import main
from tests.browser import CHROMIUM, TIMEOUT_S, dominant, png_size, screenshot, top_rows

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = (
    "Cluster",
    "Parties and signatures",
    "Responsibility",
    "Recovery criteria",
    "Severity levels",
    "Coverage, exclusions, partial capacity and spares",
    "Lost training time",
)

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agreement")
    assert main(["agreement", "sim", "--baselines-dir", str(ROOT / "baselines"), "--out", str(out)]) == 0
    return out / "agreement.html"


def _dom(page: Path, profile: Path) -> str:
    """The page as Chromium built it (its DOM after parsing, serialised)."""
    assert CHROMIUM is not None
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
            "--dump-dom", page.resolve().as_uri()]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.heavy
def test_every_section_is_on_the_page_the_browser_draws(page: Path, tmp_path: Path) -> None:
    dom = _dom(page, tmp_path / "profile")
    for title in SECTIONS:
        assert f"<h2>{title}</h2>" in dom, title
    assert "to agree" not in dom  # the shipped sim agreement states every field
    for step in ("detect the failure", "isolate the node", "prove the fabric healthy", "the restart decision"):
        assert step in dom
    assert "sha256" in dom
    assert "Handover baseline: provider and customer signed." in dom


@pytest.mark.heavy
def test_the_screenshot_is_a_drawn_document(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "agreement.png"
    done = screenshot(page, shot, 1200, 2400, tmp_path / "profile")
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert png_size(data) == (1200, 2400)
    colour, share = dominant(top_rows(data, 600))
    assert share < 0.98, f"the top of the page is one colour {colour}: nothing drawn"


@pytest.mark.heavy
def test_the_print_layout_is_a_pdf_of_several_pages(page: Path, tmp_path: Path) -> None:
    """Printable: Chromium prints it to PDF (what a party signs on paper)."""
    assert CHROMIUM is not None
    pdf = tmp_path / "agreement.pdf"
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}",
            "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.resolve().as_uri()]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    assert data.count(b"/Type /Page\n") + data.count(b"/Type /Page ") + data.count(b"/Type/Page") >= 2
