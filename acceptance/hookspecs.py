"""The hooks through which a site extends the acceptance suite (pytest-xdist ``newhooks.py`` style).

Implement them in a ``conftest.py`` beside your tests, or in a plugin module (``-p mysite``).
A site check gets the same treatment as the built-in criteria: its workloads run once per
run through the run's scheduler (under its deadline, labelled with the run id, deleted at
the end), and each verdict becomes a test item with junit properties, evidence files and
rows in the HTML report. Example (``examples/site_checks/conftest.py`` is a complete one,
an ``ib_write_bw`` loopback check per node that runs on ``--cluster=sim``)::

    from acceptance.criteria.site import SiteCheck

    class IbLoopback(SiteCheck):
        name, title = "ib_write_bw", "InfiniBand loopback bandwidth per node"
        def workloads(self, context): ...        # node -> NodeWorkload
        def judge(self, subject, result, reference, context): ...   # -> Verdict

    def pytest_acceptance_site_checks(context):
        return [IbLoopback()]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from acceptance.criteria.context import RunContext
    from acceptance.criteria.site import SiteCheck
    from acceptance.judge.verdict import Verdict


@pytest.hookspec
def pytest_acceptance_site_checks(context: RunContext) -> Sequence[SiteCheck] | None:
    """The site's own checks for this run (called once per pytest process, with the run's frozen context).

    Each (check, subject) pair becomes an item of ``acceptance/test_site_checks.py``, run
    after the agreement's criteria. Return None or ``[]`` for none.
    """


@pytest.hookspec
def pytest_acceptance_verdict(item: pytest.Item, verdict: Verdict) -> None:
    """Called with every verdict of the suite, in the process that judged it, before the item passes or fails.

    For what a site does with verdicts as they come (a chat message, a metric); the
    verdict is final, a hook cannot change it.
    """
