"""The state of one acceptance run: profile, baseline, run id, and what the header shows."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance import __version__
from acceptance.baseline import BaselineStore, LoadedBaseline
from acceptance.errors import AcceptanceError
from acceptance.options import Setting
from acceptance.profile import Profile, load_profile


def new_run_id(now: datetime) -> str:
    return f"ra-{now.astimezone(UTC).strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(2)}"


@dataclass
class AcceptanceSession:
    """Everything one run of the suite needs; created in pytest_configure with --cluster."""

    config: pytest.Config
    settings: Mapping[str, Setting]
    profile: Profile
    baseline: LoadedBaseline | None
    run_id: str
    started: datetime

    @classmethod
    def open(cls, config: pytest.Config, settings: Mapping[str, Setting]) -> AcceptanceSession:
        started = datetime.now(UTC)
        baselines_dir: Path = settings["baselines_dir"].value
        if not baselines_dir.is_absolute():
            baselines_dir = config.invocation_params.dir / baselines_dir
        try:
            profile = load_profile(settings["cluster"].value, baselines_dir)
            profile.check_returned_nodes(settings["returned_nodes"].value)
            baseline = None
            if not settings["record_baseline"].value:
                baseline = BaselineStore(profile.path.parent).latest()
        except AcceptanceError as exc:
            raise pytest.UsageError(str(exc)) from None
        return cls(
            config=config,
            settings=settings,
            profile=profile,
            baseline=baseline,
            run_id=new_run_id(started),
            started=started,
        )

    def value(self, dest: str) -> Any:
        return self.settings[dest].value

    @property
    def returned_nodes(self) -> tuple[str, ...]:
        chosen: tuple[str, ...] = self.value("returned_nodes")
        return chosen or self.profile.nodes

    def header_lines(self) -> list[str]:
        p = self.profile
        lines = [
            f"recovery-acceptance {__version__}: cluster {p.name} (backend {p.backend}), run {self.run_id}",
            f"profile: {p.path}",
        ]
        if self.baseline is not None:
            lines.append(f"baseline: {self.baseline.path} sha256:{self.baseline.sha256}")
        else:
            lines.append("baseline: none loaded (recording a new handover baseline)")
        returned = ", ".join(self.value("returned_nodes")) or f"all {len(p.nodes)} nodes"
        lines.append(f"returned nodes: {returned}; ticket: {self.value('ticket') or '-'}")
        origins = [
            f"{dest}={s.value!r} ({s.origin})"
            for dest, s in self.settings.items()
            if s.origin != "default" and dest != "cluster"
        ]
        if origins:
            lines.append("settings: " + ", ".join(origins))
        return lines

    def pytest_plugin(self) -> object:
        return _SessionHooks(self)

    def close(self) -> None:
        """Release what the run holds (cluster connections, the simulator)."""


class _SessionHooks:
    """Hooks that exist only while a run is active."""

    def __init__(self, session: AcceptanceSession) -> None:
        self.session = session

    def pytest_report_header(self) -> list[str]:
        return self.session.header_lines()
