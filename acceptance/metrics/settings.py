"""How to reach a Prometheus (profile ``prometheus:``) and where offline dumps are (``recurrence.offline_dumps``).

Secrets never sit in the profile: a bearer token or a password is read from a file or an
environment variable that the profile names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.errors import UsageError
from acceptance.units import parse_duration


@dataclass(frozen=True)
class PrometheusSettings:
    """A Prometheus HTTP API endpoint and how criterion 5 queries it."""

    url: str
    bearer_token_file: Path | None = None
    bearer_token_env: str | None = None
    username: str | None = None
    password_file: Path | None = None
    password_env: str | None = None
    ca_file: Path | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    insecure_skip_verify: bool = False
    timeout_s: float = 60.0
    deadline_s: float = 600.0
    chunk_s: float = 24 * 3600.0
    nodes_per_query: int = 256
    node_label: str = "Hostname"
    selector: str = ""
    scrape_interval_s: float = 15.0

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], base: Path) -> PrometheusSettings:
        """From a profile's ``prometheus:`` section; paths are relative to the profile's folder."""

        def path(key: str) -> Path | None:
            value = raw.get(key)
            if value is None:
                return None
            found = Path(os.path.expanduser(str(value)))
            return found if found.is_absolute() else (base / found).resolve()

        return cls(
            url=str(raw["url"]).rstrip("/"),
            bearer_token_file=path("bearer_token_file"),
            bearer_token_env=raw.get("bearer_token_env"),
            username=raw.get("username"),
            password_file=path("password_file"),
            password_env=raw.get("password_env"),
            ca_file=path("ca_file"),
            client_cert=path("client_cert"),
            client_key=path("client_key"),
            insecure_skip_verify=bool(raw.get("insecure_skip_verify", False)),
            timeout_s=parse_duration(raw.get("timeout", 60)),
            deadline_s=parse_duration(raw.get("deadline", 600)),
            chunk_s=parse_duration(raw.get("chunk", "24h")),
            nodes_per_query=int(raw.get("nodes_per_query", 256)),
            node_label=str(raw.get("node_label", "Hostname")),
            selector=str(raw.get("selector", "")),
            scrape_interval_s=parse_duration(raw.get("scrape_interval", 15)),
        )

    def headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """Authorization from the token or password the profile points at; a UsageError when it cannot be read."""
        import base64

        token = self._secret(self.bearer_token_file, self.bearer_token_env, "bearer token", environ)
        if token:
            return {"Authorization": f"Bearer {token}"}
        if self.username:
            password = self._secret(self.password_file, self.password_env, "password", environ) or ""
            raw = base64.b64encode(f"{self.username}:{password}".encode()).decode("ascii")
            return {"Authorization": f"Basic {raw}"}
        return {}

    @staticmethod
    def _secret(file: Path | None, env: str | None, what: str, environ: Mapping[str, str]) -> str | None:
        if file is not None:
            try:
                return file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise UsageError(f"prometheus {what} file {file}: {exc.strerror or exc}") from None
        if env:
            value = environ.get(env)
            if not value:
                raise UsageError(f"prometheus {what}: environment variable {env} is not set")
            return value
        return None
