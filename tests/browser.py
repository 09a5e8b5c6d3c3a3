"""A real headless Chromium for the HTML report, and a tiny PNG reader for what it draws.

`top_rows` decodes only the first rows of a PNG (8-bit RGB/RGBA, not interlaced: what Chromium
writes) with zlib and the five PNG row filters, so a test reads the banner's colour in pure Python.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TIMEOUT_S = 120


def screenshot(page: Path, out: Path, width: int, height: int, profile: Path) -> subprocess.CompletedProcess[str]:
    """Open `page` in headless Chromium and save a `width` × `height` screenshot to `out`."""
    assert CHROMIUM is not None
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
        f"--user-data-dir={profile}", f"--screenshot={out}", f"--window-size={width},{height}",
        page.resolve().as_uri(),
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def top_rows(data: bytes, rows: int) -> list[list[tuple[int, int, int]]]:
    """The RGB pixels of the first `rows` rows."""
    width, height = png_size(data)
    pos, idat, header = 8, bytearray(), b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    depth, colour, interlace = header[8], header[9], header[12]
    assert (depth, interlace) == (8, 0), "only 8-bit, not interlaced"
    assert colour in (2, 6), "only RGB or RGBA"
    bpp = 3 if colour == 2 else 4
    stride = width * bpp
    rows = min(rows, height)
    raw = zlib.decompressobj().decompress(bytes(idat), (stride + 1) * rows)
    out, previous = [], bytearray(stride)
    for r in range(rows):
        kind, line = raw[r * (stride + 1)], bytearray(raw[r * (stride + 1) + 1 : (r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = previous[i], previous[i - bpp] if i >= bpp else 0
            pred = (0, a, b, (a + b) // 2, _paeth(a, b, c))[kind]
            line[i] = (line[i] + pred) & 0xFF
        out.append([(line[i], line[i + 1], line[i + 2]) for i in range(0, stride, bpp)])
        previous = line
    return out


def dominant(pixels: list[list[tuple[int, int, int]]]) -> tuple[tuple[int, int, int], float]:
    """The most common colour of a region and its share."""
    counts = Counter(p for row in pixels for p in row)
    colour, n = counts.most_common(1)[0]
    return colour, n / sum(counts.values())


def hex_rgb(colour: str) -> tuple[int, int, int]:
    value = colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
