"""Fixtures of the project's own tests.

pytester's inline runs drop the modules first imported inside them, and numpy refuses
to be imported twice in one process: every process that runs tests imports the plugin's
whole dependency tree at its session's start (`_import_the_plugin_tree`), before any inline
run, so every run finds it already loaded.
"""

import gc
import importlib
import multiprocessing.util
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

#: The session's temp folder (TMPDIR of every process it starts, xdist workers included), made by the first
#: process and removed at its end: what a killed run leaves (a SIGKILL'd harness cannot remove its run folder
#: or its emulator's kubeconfig) does not pile up in /tmp, two sessions side by side never see each other's
#: simulated Slurm markers, and the summary says what was left. pytest's own tmp_path folders stay in the
#: machine's temp folder (PYTEST_DEBUG_TEMPROOT), kept after the session as pytest keeps them.
SESSION_TMP = "RA_TESTS_SESSION_TMP"
PYCACHE = Path(__file__).resolve().parents[1] / ".pycache"
if SESSION_TMP not in os.environ:
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    os.environ[SESSION_TMP] = os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="ra-tests-tmp-")
    os.chmod(os.environ[SESSION_TMP], 0o711)  # entered, not listed, by the simulated Slurm's munged (user munge)
    tempfile.tempdir = None  # computed again from TMPDIR in this process too

import pytest  # noqa: E402

from tests.suite_run import run_of  # noqa: E402

#: what an inline run of the plugin imports (matplotlib's where the package draws), imported first by the session
PLUGIN_TREE = ("numpy", "pandas", "matplotlib.figure", "matplotlib.backends.backend_agg", "acceptance.run_session")


def _import_the_plugin_tree(config: pytest.Config) -> None:
    """In a process that runs tests: not the controller of ``-n N``, which only hands items to its workers
    (these imports cost it 1.8 s before it started them)."""
    if not hasattr(config, "workerinput") and config.getoption("dist", "no") != "no":
        return
    for name in PLUGIN_TREE:
        importlib.import_module(name)


@pytest.fixture
def suite_run(request: pytest.FixtureRequest, runs: Any) -> Any:
    """The run of this test's one `suite_run` mark, from its module's `runs` (SimRuns or SuiteRuns), or from its
    variant ``runs.variants[NAME]`` for ``suite_run(..., variant=NAME)``."""
    marks = list(request.node.iter_markers("suite_run"))
    assert len(marks) == 1, f"{request.node.nodeid}: one suite_run mark, not {len(marks)}"
    return run_of(runs, marks[0].kwargs.get("variant"), tuple(marks[0].args))


def _weight(item: pytest.Item) -> int:
    """0 for a module with end-to-end (`slow`) items, 1 with `heavy` ones, 2 otherwise."""
    marks = {mark.name for mark in item.iter_markers()}
    return 0 if "slow" in marks else 1 if "heavy" in marks else 2


#: the module fixtures that make a module's suite runs (or fault-matrix cases) ahead, several at a time
AHEAD_FIXTURES = frozenset({"runs", "cases"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Two halves, for pytest-xdist's work stealing (below), which starts each of two workers on one half:
    each half holds its share of the end-to-end modules (dealt in turn, the longest first by how many items
    judge runs made ahead), of the heavy ones and of the rest (evening the item counts). The first half
    starts with its end-to-end modules, the second ends with them: while one worker waits on daemons and
    suite runs, the other runs CPU-bound items, and the middle of the order, where the halves meet whatever
    their counts, is short items. Each module's items stay together and in their order (the order is the
    same in every worker, as xdist requires)."""
    del config
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    weight = {m: min(_weight(item) for item in found) for m, found in modules.items()}
    ahead = {m: sum(bool(AHEAD_FIXTURES & set(getattr(i, "fixturenames", ()))) for i in found)
             for m, found in modules.items()}  # fmt: skip
    shares: list[list[list[str]]] = [[[], [], []], [[], [], []]]  # half -> weight -> modules
    sizes = [0, 0]  # items per half
    for module in sorted(modules, key=lambda m: (weight[m], -ahead[m])):
        if weight[module] < 2:  # end-to-end, then heavy: dealt in turn, the longest first
            half = len(shares[0][weight[module]]) > len(shares[1][weight[module]])
        else:  # the rest evens the halves' item counts
            half = sizes[1] < sizes[0]
        shares[half][weight[module]].append(module)
        sizes[half] += len(modules[module])
    (slow_a, heavy_a, rest_a), (slow_b, heavy_b, rest_b) = shares
    order = [*slow_a, *heavy_a, *rest_a, *rest_b, *slow_b, *heavy_b]
    items[:] = [item for module in order for item in modules[module]]


def pytest_configure(config: pytest.Config) -> None:
    _keep_bytecode(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The plugin tree, compiled into the kept bytecode folder, once pytest-cov has started measuring (it starts
    an xdist worker's coverage at the session's start): imported before, at the configuration, an xdist worker
    measured none of the lines its tests ran in the package's modules, only their import (with `-n 2`,
    tests/test_report_decision.py covered 64% of acceptance/report/decision.py instead of 98%)."""
    _import_the_plugin_tree(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    """One full garbage collection, then the survivors frozen out of every later one. pytest collects five
    times at its end (to report what objects still in reference cycles print when collected), then the
    interpreter again at its exit; on an xdist worker of the full session, with about a million objects alive,
    that made each worker end 3.2-3.7 s after its last test. The first collection still finds all garbage while
    pytest listens for what it prints; what survives it is not garbage, and frozen it is not traversed again."""
    gc.collect()
    gc.freeze()


def _keep_bytecode(config: pytest.Config) -> None:
    """Bytecode for the session's own Python processes (this one, suite runs, the CLI, xdist workers) in one
    ignored folder of the checkout, ``.pycache/``, kept from one session to the next: where
    PYTHONDONTWRITEBYTECODE is set (this machine sets it), every one of them compiled the package again and
    pytest rewrote the asserts of every test module again, each worker on its own, in every session (the fast
    tier: 61.5 s with a folder per session, 51 s with this one kept). The source folders stay without
    __pycache__; a PYTHONPYCACHEPREFIX of the user's own is kept."""
    if hasattr(config, "workerinput"):
        return
    # at the process's exit, after multiprocessing's own exit removed the fork server's folder inside it
    # (exit priority -100; removed first, that one printed a FileNotFoundError traceback after the summary)
    multiprocessing.util.Finalize(None, _remove_session_tmp, exitpriority=-101)
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    PYCACHE.mkdir(exist_ok=True)
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix, sys.dont_write_bytecode = str(PYCACHE), False  # this process's own imports from now on


def _session_leftovers() -> Counter[str]:
    """What the session's processes left in its temp folder, by kind (the name up to its random part)."""
    folder = os.environ.get(SESSION_TMP, "")
    # the simulator's memory of the ports it gave; the folder of this process's own fork server (multiprocessing
    # removes it at the process's exit, after this summary: a run without -n listed it as left)
    expected = ("acceptance-ports-", "pymp-")
    names = [n for n in (os.listdir(folder) if folder and os.path.isdir(folder) else []) if not n.startswith(expected)]
    return Counter(re.sub(r"-?[a-z0-9_]{8}$", "", name) or name for name in names)  # mkdtemp's 8 random letters


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    left = _session_leftovers()
    if left:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(left.items()))
        terminalreporter.write_line(f"left in the session's temp folder (removed now): {kinds}")


def _remove_session_tmp() -> None:
    folder = os.environ.get(SESSION_TMP)
    if folder and os.path.basename(folder).startswith("ra-tests-tmp-"):
        shutil.rmtree(folder, ignore_errors=True)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``-n N`` alone shares the items by work stealing: each worker starts with half, and one that runs
    out takes half of what another has not started (the default `load` schedule hands out chunks in
    collection order, and a worker whose chunk held the suite runs ended minutes after the other).
    An explicit ``--dist`` is kept."""
    if config.getoption("dist") != "load" or "--dist" in " ".join(config.invocation_params.args):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)
