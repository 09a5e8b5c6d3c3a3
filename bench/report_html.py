"""Size and render time of report.html as the cluster grows (issue 16, part 5).

    python bench/report_html.py                      # 16, 128, 1024 nodes
    python bench/report_html.py --nodes 64 4096

Per size: DCGM r3 verdicts for every node (three faulty GPUs, judged by the real judge on the
simulator's output; see tests/report_scale.py), the HTML page (bytes, and the heatmap's share),
the time to render it, and, when chromium is installed, the time a headless Chromium takes to
open it and save a 1280x2400 screenshot.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptance.report import heatmap, heatmap_html
from acceptance.report.html import render_html
from tests.browser import CHROMIUM, screenshot
from tests.report_scale import evidence_files, node_names, scale_report


def faults(n: int) -> list[str]:
    names = node_names(n)
    return [f"gpu-xid@{names[4 % n]}:2", f"gpu-throttle@{names[(n * 2) // 3]}:3", f"ecc-dbe@{names[-1]}:6"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 128, 1024])
    args = parser.parse_args()
    print(f"{'nodes':>6} {'html bytes':>11} {'heatmap':>9} {'bytes/node':>10} {'render s':>9} {'chromium s':>10}")
    for n in args.nodes:
        data = scale_report(n, faults(n))
        files = evidence_files(n)
        start = time.perf_counter()
        html = render_html(data, signing="unsigned", signed=False, files=files)
        render_s = time.perf_counter() - start
        size = len(html.encode())
        drawn = len(heatmap_html.render(heatmap.of_report(data, files)).encode())
        browser = "-"
        if CHROMIUM is not None:
            with tempfile.TemporaryDirectory() as tmp:
                page = Path(tmp) / "report.html"
                page.write_text(html)
                start = time.perf_counter()
                done = screenshot(page, Path(tmp) / "shot.png", 1280, 2400, Path(tmp) / "profile")
                browser = f"{time.perf_counter() - start:.1f}" if done.returncode == 0 else f"rc {done.returncode}"
        print(f"{n:>6} {size:>11,} {drawn / size:>9.0%} {size / n:>10,.0f} {render_s:>9.2f} {browser:>10}")


if __name__ == "__main__":
    main()
