"""Fixtures of the project's own tests.

pytester's inline runs drop the modules first imported inside them, and numpy refuses
to be imported twice in one process: import the plugin's whole dependency tree here,
before any inline run, so every run finds it already loaded.
"""

import os
import shutil
import tempfile
from typing import Any

import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest

import acceptance.run_session  # noqa: F401
from tests.suite_run import run_of


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
    """Bytecode for the session's own Python processes (suite runs, the CLI, xdist workers), in a folder of
    its own: where PYTHONDONTWRITEBYTECODE is set (this machine sets it), every one of them compiled the
    package again, and pytest rewrote its asserts again (the whole suite in a fresh clone: 10 min 46 s of
    user CPU before, 9 min 32 s with this). The checkout stays without __pycache__; the folder goes at the
    end of the session."""
    if hasattr(config, "workerinput") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = tempfile.mkdtemp(prefix="ra-tests-pycache-")
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    config.add_cleanup(lambda: _forget_prefix(prefix))


def _forget_prefix(prefix: str) -> None:
    if os.environ.get("PYTHONPYCACHEPREFIX") == prefix:
        del os.environ["PYTHONPYCACHEPREFIX"]
    shutil.rmtree(prefix, ignore_errors=True)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``-n N`` alone shares the items by work stealing: each worker starts with half, and one that runs
    out takes half of what another has not started (the default `load` schedule hands out chunks in
    collection order, and a worker whose chunk held the suite runs ended minutes after the other).
    An explicit ``--dist`` is kept."""
    if config.getoption("dist") != "load" or "--dist" in " ".join(config.invocation_params.args):
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)
