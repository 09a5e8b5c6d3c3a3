"""How the report counts a verdict or a skipped item; import-light, so the plugin reads it at start.

`BAD_STATUSES` are the verdict statuses that fail an item: FAIL, ERROR, NOT COMPARABLE (conditions
differ from the baseline's) and INCONCLUSIVE (data missing), worst first. `PREFLIGHT_SKIP` starts
the reason of an item skipped because the preflight found the cluster unusable (not judged).
"""

from __future__ import annotations

BAD_STATUSES = ("fail", "error", "not-comparable", "inconclusive")
PREFLIGHT_SKIP = "preflight failed: "
