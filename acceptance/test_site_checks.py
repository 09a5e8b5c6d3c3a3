"""A site's own checks, added through the hooks of `acceptance.hookspecs` (none unless a site adds them).

Each (check, subject) is one item, run after the agreement's criteria, judged by the check.
"""

from __future__ import annotations

from acceptance.suite import Suite


def test_site_check(acceptance: Suite, site_check: tuple[str, str]) -> None:
    """The site's check passes for this subject."""
    acceptance.require_preflight()
    name, subject = site_check
    acceptance.check(acceptance.run.site.verdict(name, subject))
