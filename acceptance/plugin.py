"""pytest hooks of the harness: options, activation, header, fixtures, report wiring.

Without ``--cluster`` nothing is registered: unrelated pytest runs are unchanged.
The state of an active run lives in one `AcceptanceSession`, kept in ``config.stash``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from acceptance import options

if TYPE_CHECKING:
    from acceptance.session import AcceptanceSession

SESSION: pytest.StashKey[AcceptanceSession] = pytest.StashKey()
SUITE_DIR = Path(__file__).resolve().parent

USAGE = (
    "the acceptance suite needs a cluster: `pytest acceptance/ --cluster=sim` runs it on the embedded "
    "simulated cluster; `--cluster=NAME` tests the cluster of baselines/NAME/cluster.yaml"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = {option.dest: options.resolve(config, option) for option in options.OPTIONS}
    if not settings["cluster"].value:
        if _targets_suite(config):
            raise pytest.UsageError(USAGE)
        return
    from acceptance.session import AcceptanceSession

    session = AcceptanceSession.open(config, settings)
    config.stash[SESSION] = session
    config.pluginmanager.register(session.pytest_plugin(), "recovery-acceptance-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        session.close()


def _targets_suite(config: pytest.Config) -> bool:
    """True when the command line asks pytest to collect the acceptance suite itself."""
    for arg in config.args:
        head = arg.split("::", 1)[0]
        if head == "acceptance" and config.option.pyargs:
            return True
        try:
            path = (config.invocation_params.dir / head).resolve()
        except OSError:
            continue
        if path == SUITE_DIR or SUITE_DIR in path.parents:
            return True
    return False
