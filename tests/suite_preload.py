"""What a suite run imports, imported once by the fork server of tests/suite_process.py.

A suite run rewrites the asserts of every module of the package (pytest marks a plugin's whole distribution
for it) and warns, an error under the project's ``filterwarnings``, about a module of it imported before it
could. So the package is imported here the way a run imports it: through the assert-rewriting import hook of a
pytest configuration parsed as a suite run parses its own (no conftest, no capture, nothing configured), which
is then undone. pytest's own plugins and the parts of the kubernetes client the package calls come with it.
"""

from __future__ import annotations

import gc
import importlib
import pkgutil
from pathlib import Path

import _pytest.config
import matplotlib
import pandas  # noqa: F401

matplotlib.use("Agg")

SUITE = Path(__file__).resolve().parents[1] / "acceptance"
#: run as programs, not imported by a run
PROGRAMS = ".__main__"
#: the suite's test modules: cheap, and pytest's collection imports them itself
TEST_MODULES = "acceptance.test_"


def _import_the_package() -> None:
    config = _pytest.config._prepareconfig([str(SUITE), "--noconftest", "-s", "-p", "no:cacheprovider"])
    try:
        import acceptance

        for found in pkgutil.walk_packages(acceptance.__path__, "acceptance."):
            if not found.name.endswith(PROGRAMS) and not found.name.startswith(TEST_MODULES):
                importlib.import_module(found.name)
    finally:
        config._ensure_unconfigure()


def _draw_a_figure() -> None:
    """What the report's first plot costs a run once: the rest of matplotlib imported, its artists' property
    tables built, the font loaded and its glyphs rendered (a healthy run's report drew 0.8 s more CPU at its first
    plot than at the next)."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3), dpi=100)
    left, right = fig.subplots(1, 2)
    left.plot([0, 1, 2], [1.0, 3.0, 2.0], marker="o", label="now")
    left.bar([0, 1], [2.0, 1.0])
    left.axhline(1.5, linestyle="--")
    left.set(title="step time", xlabel="step", ylabel="s")
    left.legend()
    right.hist([1.0, 2.0, 2.5, 3.0], bins=3)
    right.text(0.5, 0.5, "0123456789 abcdefghijklmnopqrstuvwxyz %.,:()")
    fig.tight_layout()
    FigureCanvasAgg(fig).print_png(io.BytesIO())  # type: ignore[no-untyped-call]


for _plugin in _pytest.config.default_plugins:
    importlib.import_module(f"_pytest.{_plugin}")
for _api in ("core_v1_api", "custom_objects_api", "batch_v1_api", "version_api", "apis_api"):
    importlib.import_module(f"kubernetes.client.api.{_api}")
_import_the_package()
_draw_a_figure()
# what is imported lives as long as each run: the collector leaves it alone, and the run's pages stay shared
gc.freeze()
