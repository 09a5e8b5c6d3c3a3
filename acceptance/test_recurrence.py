"""Criterion 5: no recurrence during the agreed probation window after the ticket's passing acceptance.

One item: PASS only when the whole window has elapsed and nothing recurred; PENDING (a skip)
while it is open; FAIL at the first recurrence; INCONCLUSIVE when data is missing.
"""

from __future__ import annotations

from acceptance.suite import Suite


def test_no_recurrence(acceptance: Suite) -> None:
    """Nothing recurred on the returned nodes, in the cluster or in the job during the agreed window."""
    acceptance.skip_if(acceptance.run.recurrence.not_applicable())
    acceptance.check(acceptance.run.recurrence.verdict())
