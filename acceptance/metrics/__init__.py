"""I/O for criterion 5: the series of dcgm-exporter and of the production job, from a Prometheus or from dumps.

`open_source(profile)` gives the profile's source: its ``prometheus:`` HTTP API, or the folder of
text dumps of ``recurrence.offline_dumps`` (air-gapped sites). A profile that names neither
cannot be judged: a usage error, never a silent fallback.
"""

from __future__ import annotations

from pathlib import Path

from acceptance.errors import QueryFailed, UsageError
from acceptance.metrics.base import MetricsSource, QueryStats
from acceptance.profile import Profile

__all__ = ["MetricsSource", "QueryFailed", "QueryStats", "open_source"]


def open_source(profile: Profile) -> MetricsSource:
    """The metrics source the profile names."""
    dumps = profile.recurrence.get("offline_dumps")
    if profile.prometheus and dumps:
        raise UsageError(f"{profile.path}: name either prometheus.url or recurrence.offline_dumps, not both")
    if profile.prometheus:
        from acceptance.metrics.remote import PrometheusSource
        from acceptance.metrics.settings import PrometheusSettings

        return PrometheusSource(PrometheusSettings.from_mapping(profile.prometheus, profile.path.parent))
    if dumps:
        from acceptance.metrics.offline import OfflineSource

        folder = Path(str(dumps))
        folder = folder if folder.is_absolute() else (profile.path.parent / folder).resolve()
        return OfflineSource(folder, str(profile.prometheus.get("node_label", "Hostname")))
    raise UsageError(
        f"{profile.path}: criterion 5 needs metrics: a 'prometheus:' section with the url of the "
        "Prometheus that scrapes dcgm-exporter, or recurrence.offline_dumps (a folder of dumps)"
    )
