"""A real headless Chromium for the HTML report, and readers for the PNG it draws."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_S = 120


def screenshot(
    page: Path, out: Path, width: int, height: int, profile: Path, extra: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """Open `page` in headless Chromium and save a `width` × `height` screenshot to `out`.

    `extra`: more Chromium switches (``--enable-logging=stderr --v=0`` puts the page's console on stderr).
    The finished process is returned: its return code, stdout and stderr.
    """
    assert CHROMIUM is not None
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
        f"--user-data-dir={profile}", f"--screenshot={out}", f"--window-size={width},{height}",
        *extra, page.resolve().as_uri(),
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def pixels(png: bytes) -> np.ndarray:
    """The PNG's RGB pixels as a height × width × 3 array of 0–255 ints (decoded by matplotlib, a dependency of
    the report)."""
    return (mpimg.imread(io.BytesIO(png), format="png")[..., :3] * 255).round().astype(int)


def colour_pixels(png: bytes, rgb: Sequence[int] | np.ndarray, tol: int) -> int:
    """How many pixels are within `tol` of `rgb` (the sum of the three channels' differences)."""
    return int((np.abs(pixels(png) - np.asarray(rgb)).sum(axis=-1) <= tol).sum())


def top_rows(data: bytes, rows: int) -> list[list[tuple[int, int, int]]]:
    """The RGB pixels of the first `rows` rows."""
    return [[(int(r), int(g), int(b)) for r, g, b in row] for row in pixels(data)[:rows]]


def dominant(pixels: list[list[tuple[int, int, int]]]) -> tuple[tuple[int, int, int], float]:
    """The most common colour of a region and its share."""
    counts = Counter(p for row in pixels for p in row)
    colour, n = counts.most_common(1)[0]
    return colour, n / sum(counts.values())


def hex_rgb(colour: str) -> tuple[int, int, int]:
    value = colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
