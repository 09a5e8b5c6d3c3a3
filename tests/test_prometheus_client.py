"""The Prometheus client and its PromQL: builders by equality; TLS and basic auth against a real Prometheus."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import bcrypt
import pytest

from acceptance.errors import QueryFailed, UsageError
from acceptance.metrics import promql
from acceptance.metrics.client import PrometheusClient
from acceptance.metrics.settings import PrometheusSettings
from acceptance.sim import promserver
from tests.probation_support import Scenario, backfilled

B = "140737488355328"


def test_selector_escapes_node_names_and_keeps_extra_matchers() -> None:
    assert promql.selector("M", "Hostname", ["gpu-07"]) == 'M{Hostname="gpu-07"}'
    assert promql.selector("M", "node", ["a.b", "c+d"], 'job="dcgm-exporter"') == (
        'M{node=~"a\\\\.b|c\\\\+d",job="dcgm-exporter"}'
    )
    assert promql.names_selector(["A", "B"], "Hostname", ["n1", "n2"]) == '{__name__=~"A|B",Hostname=~"n1|n2"}'


def test_expressions_keep_dcgm_blanks_out() -> None:
    sel = 'M{Hostname="n"}'
    assert (
        promql.xid_changes(sel)
        == f'((M{{Hostname="n"}} < {B}) > 0) unless (M{{Hostname="n"}} == (M{{Hostname="n"}} offset 60s))'
    )
    assert promql.increases(sel) == f'((M{{Hostname="n"}} < {B}) - (M{{Hostname="n"}} offset 60s < {B})) > 0'
    assert promql.nonzero(sel) == f'(M{{Hostname="n"}} < {B}) > 0'
    assert promql.bits("M", 0x48) == f"(M < {B}) and (((floor(M / 8) % 2) + (floor(M / 64) % 2)) > 0)"
    assert promql.blank(sel, 3600) == f'last_over_time(M{{Hostname="n"}}[3600s]) >= {B}'
    assert promql.presence(sel, "Hostname", 60) == 'count by (Hostname) (count_over_time(M{Hostname="n"}[60s]))'
    assert promql.suspects("increase", sel, 86760) == '(changes(M{Hostname="n"}[86760s]) > 0)'
    assert promql.suspects("nonzero", sel, 100) == f'(max_over_time(M{{Hostname="n"}}[100s]) > 0 < {B})'
    assert promql.suspects("xid", sel, 100) == (
        f'(changes(M{{Hostname="n"}}[100s]) > 0) or (max_over_time(M{{Hostname="n"}}[100s]) > 0 < {B})'
    )


def test_credentials_come_from_files_or_the_environment_never_the_profile(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t0k3n\n")
    assert PrometheusSettings(url="u", bearer_token_file=token).headers({}) == {"Authorization": "Bearer t0k3n"}
    assert PrometheusSettings(url="u", bearer_token_env="T").headers({"T": "x"}) == {"Authorization": "Bearer x"}
    basic = PrometheusSettings(url="u", username="probation", password_env="P").headers({"P": "s3cret"})
    assert basic == {"Authorization": "Basic cHJvYmF0aW9uOnMzY3JldA=="}
    with pytest.raises(UsageError, match="environment variable T is not set"):
        PrometheusSettings(url="u", bearer_token_env="T").headers({})
    with pytest.raises(UsageError, match=r"bearer token file .*missing"):
        PrometheusSettings(url="u", bearer_token_file=tmp_path / "missing").headers({})


def test_profile_section_paths_are_relative_to_the_profile(tmp_path: Path) -> None:
    found = PrometheusSettings.from_mapping({"url": "https://p:9090/", "ca_file": "ca.pem", "chunk": "6h"}, tmp_path)
    assert (found.url, found.ca_file, found.chunk_s, found.node_label) == ("https://p:9090", tmp_path / "ca.pem",
                                                                           21600.0, "Hostname")  # fmt: skip


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A prometheus behind TLS (a self-signed certificate) and basic auth, over a small simulated period."""
    if shutil.which("prometheus") is None or shutil.which("openssl") is None:
        pytest.skip("prometheus or openssl is not installed")
    folder = tmp_path_factory.mktemp("secured")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(folder / "server.key"), "-out", str(folder / "server.crt")],
                   check=True, capture_output=True)  # fmt: skip
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    web = folder / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {folder / 'server.crt'}\n  key_file: {folder / 'server.key'}\n"
                   f"basic_auth_users:\n  probation: {hashed}\n")  # fmt: skip
    start = datetime.now(UTC) - timedelta(hours=2)
    tsdb, _, _ = backfilled(folder / "data", [Scenario("s", ("sim-node-07",), start, 3600)])
    server = promserver.PrometheusServer.start(tsdb, "tls", web_config=web)
    try:
        yield server.url, folder / "server.crt"
    finally:
        server.stop()


def _client(url: str, **settings: object) -> PrometheusClient:
    return PrometheusClient(PrometheusSettings(url=url, deadline_s=20, **settings), environ={"P": "s3cret", "Q": "x"})  # type: ignore[arg-type]


def test_tls_and_basic_auth(secured: tuple[str, Path]) -> None:
    url, ca = secured
    assert url.startswith("https://127.0.0.1:")
    client = _client(url, ca_file=ca, username="probation", password_env="P")
    found = client.query('count(DCGM_FI_DEV_GPU_TEMP{Hostname="sim-node-07"})', datetime.now(UTC) - timedelta(hours=1))
    assert found[0]["value"][1] == "8"
    assert client.describe() == f"Prometheus at {url} (basic auth)"
    with pytest.raises(QueryFailed, match="HTTP 401"):
        _client(url, ca_file=ca, username="probation", password_env="Q").query("up", datetime.now(UTC))
    with pytest.raises(QueryFailed, match=r"TLS: .*CERTIFICATE_VERIFY_FAILED"):
        _client(url, username="probation", password_env="P").query("up", datetime.now(UTC))
