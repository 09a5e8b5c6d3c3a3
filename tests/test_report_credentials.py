"""Credentials in every form people write them (issue 23, part 3), and none of the tools' own outputs.

Planted forms go through a real report (kube.env / smoke.env / the smoke argv) and through
`acceptance bundle` (a job log); the scan before signing fails closed; real tool outputs (the corpus,
fixtures/, a simulated report) hold no find.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acceptance.cli import main
from acceptance.report.credentials import find_credentials, is_secret_name
from acceptance.report.data import ReportData
from acceptance.report.finalize import finalize
from acceptance.report.folder import ReportFolder
from acceptance.report.secrets import REDACTED, scan_folder, scrub_obj, scrub_text
from acceptance.report.sign import SignOptions
from tests.shared import CORPUS, CORPUS2, CORPUS3

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "baselines"


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "keys" / "id_ed25519"
    path.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ops@example", "-f", str(path)], check=True)
    return path


# issue 23.3: planted in kube.env / smoke.env (and the smoke argv), these reached 38 of 225 files
PLANTED_ENV = {
    "REDIS_PASSWORD_PRIMARY": "redisPlanted-9f8e7d6c5b",
    "WANDB_KEY": "wandbPlanted0123456789abcdef",
    "AZURE_STORAGE_KEY": "azurePlantedKeyZZZZZZZZZZZZZ==",
    "GITHUB_PAT": "ghp_" + "P1antedGithubPat" * 2 + "AbCd",
    "CLIENT_SECRET_VALUE": "clientSecretPlanted-42-abc",
}
ARGV_TOKEN = "argvPlantedHfTokenQQQQ-1234"

# issue 23.3: planted in a job log given to `acceptance bundle`
HF = "hf_" + "LogPlantedHuggingFace" * 2
WANDB = "wandbLogPlanted0123456789"
PASSWORD = "Pa55-log-planted!"
MYSQL = "mysqlLogPlanted77"
REDIS = "redisLogPlanted88"
GHP = "ghp_" + "LogPlantedBareGithub" * 2
AKIA = "AKIA" + "LOGPLANTEDKEY123"
LOG_FORMS = {
    "dict repr": (f"config: {{'HF_TOKEN': '{HF}', 'seed': 1}}", HF),
    "megatron dump": (f"  hf_token ........................................ {HF}x", HF + "x"),
    "megatron wandb": (f"  wandb_api_key ................................... {WANDB}", WANDB),
    "--password value": (f"launch: python train.py --password {PASSWORD} --seed 1", PASSWORD),
    "MYSQL_PWD=": (f"env: MYSQL_PWD={MYSQL} NCCL_DEBUG=INFO", MYSQL),
    "REDIS_PASSWORD_PRIMARY=": (f"REDIS_PASSWORD_PRIMARY={REDIS}", REDIS),
    "bare ghp_": (f"cloning with {GHP} done", GHP),
    "bare AKIA": (f"aws says {AKIA} is unknown", AKIA),
}


@pytest.mark.parametrize("form", sorted(LOG_FORMS))
def test_each_log_form_is_scrubbed(form: str) -> None:
    line, secret = LOG_FORMS[form]
    scrubbed = scrub_text(f"step 1 loss 2.3\n{line}\nstep 2 loss 2.2\n")
    assert secret not in scrubbed
    assert REDACTED in scrubbed
    assert "step 2 loss 2.2" in scrubbed
    assert find_credentials(scrubbed) == []  # what scrubbing leaves, the scan before signing accepts


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        *((n, True) for n in PLANTED_ENV),
        *((n, True) for n in ("hf-token", "hfToken", "MYSQL_PWD", "x-api-key", "client-key-data", "SESSION_COOKIE")),
        *((n, True) for n in ("auth", "token", "AWS_ACCESS_KEY_ID", "db_pass", "apikey", "githubPat")),
        *((n, False) for n in ("PWD", "key", "secretName", "secretKeyRef", "HF_TOKEN_FILE", "topologyKey")),
        *((n, False) for n in ("max_tokens", "tokenizer_type", "apply_query_key_layer_scaling", "public_key")),
        *((n, False) for n in ("session", "OLDPWD", "path", "pattern", "keys", "certificate-authority-data")),
    ],
)
def test_secret_names_by_any_part(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_argv_lists_and_env_references() -> None:
    argv = ["python", "train.py", "--hf-token", ARGV_TOKEN, "--seed", "1"]
    assert scrub_obj({"command": argv})["command"] == ["python", "train.py", "--hf-token", REDACTED, "--seed", "1"]
    as_yaml = yaml.safe_dump({"command": argv})
    assert ARGV_TOKEN not in scrub_text(as_yaml)
    assert "--seed" in scrub_text(as_yaml)
    assert ARGV_TOKEN not in scrub_text(json.dumps(argv, indent=2))
    ref = {"HF_TOKEN": {"valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}}
    assert scrub_obj(ref) == ref  # a reference to a Secret is evidence, not a credential
    kept = "export HF_TOKEN=$HF_TOKEN\n  hf_token ........ None\nautomountServiceAccountToken: false\n"
    assert scrub_text(kept) == kept


JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhY2NlcHRhbmNlIn0.c2lnbmF0dXJlLXBsYW50ZWQtaGVyZQ"
PROVIDER_FORMS = {
    "GitHub": "ghp_" + "Z" * 36,
    "GitHub fine-grained": "github_pat_" + "11ABCDEFG0" * 4,
    "AWS": "AKIAIOSFODNN7EXAMPLE",
    "Hugging Face": "hf_" + "q" * 34,
    "Slack": "xoxb-123456789012-1234567890123-" + "a" * 24,
    "JWT": JWT,
    "GitLab": "glpat-" + "x" * 20,
}


@pytest.mark.parametrize("provider", sorted(PROVIDER_FORMS))
def test_provider_token_forms_are_found_bare(provider: str) -> None:
    token = PROVIDER_FORMS[provider]
    text = f"2026-12-01T00:00:00Z worker-3 said {token} and went on\n"
    assert token not in scrub_text(text)
    assert [text[f.start : f.end] for f in find_credentials(text)] == [token]


def test_pem_blocks_and_url_passwords() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAplanted\n-----END RSA PRIVATE KEY-----\n"
    assert "MIIEowIBAAKCAQEAplanted" not in scrub_text(pem)
    url = "pulling from https://robot:S3cr3tPlanted@registry.example/v2/ ok"
    assert "S3cr3tPlanted" not in scrub_text(url)
    assert "https://robot:[REDACTED]@registry.example" in scrub_text(url)


@pytest.mark.parametrize(
    "line",
    [
        "GPU 0: NVIDIA H200 (UUID: GPU-5f2a9c1e-8b3d-4e7f-a0c2-1d9e8f7a6b5c)",
        "    Bus Id                                : 00000000:1B:00.0",
        "image: nvcr.io/nvidia/pytorch@sha256:4f2c9a1e8b3d4e7fa0c21d9e8f7a6b5c4f2c9a1e8b3d4e7fa0c21d9e8f7a6b5c",
        "run id ra-20261201001500-3f9a, report 20261201T001500Z",
        '"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
        "  uid: 6c1e4b2a-9d8f-4e3c-b7a1-0f2e3d4c5b6a",
        "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
        "step 300 | per_token_loss: 3.1525 | tokens_per_sec: 41234 | max_tokens: 4096",
        "  tokenizer_type .................................. GPT2BPETokenizer",
        "  apply_query_key_layer_scaling ................... True",
        "  hf_token ........................................ None",
        "topologyKey: kubernetes.io/hostname",
        "secretName: nccl-env",
        "    TokenExpirationSeconds:  3607",
        "running the basic connectivity test on 16 nodes",
        "        mountPath: /dev/shm",
    ],
)
def test_tool_outputs_are_not_credentials(line: str) -> None:
    assert find_credentials(line) == []
    assert scrub_text(line) == line


# ---------------------------------------------------------------------------------- false positives


def _text_files(root: Path) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.stat().st_size < 8_000_000:
            try:
                path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            out.append(path)
    return out


def _finds(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        found += [f"{path}:{f.line(text)}: {f.kind}" for f in find_credentials(text)]
    return found


def test_the_fixtures_hold_no_credential_looking_value() -> None:
    """fixtures/ is real and simulated tool output (DCGM, nccl-tests, nvidia-smi, kubectl, logs) and demo keys."""
    paths = [p for p in _text_files(ROOT / "fixtures") if "keys" not in p.parts]
    assert len(paths) > 20
    assert _finds(paths) == []


@pytest.mark.parametrize("root", [CORPUS, CORPUS2, CORPUS3], ids=["corpus", "corpus-wave2", "corpus-wave3"])
def test_the_real_tool_outputs_hold_no_credential_looking_value(root: Path) -> None:
    """GPU UUIDs, PCI bus ids, sha256 digests, run ids and image digests are not credentials."""
    if not root.is_dir():
        pytest.skip(f"{root} is not here (shared reference data)")
    paths = _text_files(root)
    assert paths
    assert _finds(paths) == []


@pytest.mark.heavy
def test_a_healthy_simulated_report_holds_no_find_and_nothing_redacted(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The project's own outputs: a clean run's folder is signed-ready as written (no [REDACTED] in it).

    The healthy whole-suite run is the one test_suite_sim judges (`SimRuns` under the same session folder): made
    once per session by whichever test asks first, read only here."""
    from tests.suite_run import SimRuns, session_folder

    run = SimRuns(session_folder(tmp_path_factory, "suite-sim")).get()
    assert run.result.ret == 0, run.result.stdout.str()[-2000:]
    files = _text_files(run.report_dir)
    assert len(files) > 100
    assert _finds(files) == []
    assert [p for p in files if REDACTED in p.read_text()] == []
    assert scan_folder(run.report_dir, {}).remaining == ()


# ---------------------------------------------------------------------------------- through a report


@pytest.mark.heavy
def test_planted_env_and_argv_forms_reach_no_file_of_a_report(pytester: pytest.Pytester) -> None:
    """kube.env / smoke.env names with PASSWORD/KEY/PAT/SECRET parts and the smoke argv `--hf-token VALUE`."""
    from tests.suite_run import run_suite, sim_cluster_folder

    folder = sim_cluster_folder(pytester.path)
    profile = yaml.safe_load((folder / "cluster.yaml").read_text())
    names = list(PLANTED_ENV)
    profile["kube"]["env"].update({n: PLANTED_ENV[n] for n in names[:3]})
    profile["smoke"]["env"] = {n: PLANTED_ENV[n] for n in names[3:]}
    profile["smoke"]["command"] = [*profile["smoke"]["command"], "--hf-token", ARGV_TOKEN]
    (folder / "cluster.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    run = run_suite(pytester)
    files = [p for p in run.report_dir.rglob("*") if p.is_file()] + [run.junit]
    assert len(files) > 100
    planted = {**PLANTED_ENV, "--hf-token": ARGV_TOKEN}
    leaked = [f"{p.name}: {n}" for p in files for n, v in planted.items() if v.encode() in p.read_bytes()]
    assert not leaked
    assert "not signed" not in run.result.stdout.str()
    smoke = (run.report_dir / "manifests" / "training" / "smoke.yaml").read_text()
    assert "--hf-token" in smoke
    assert REDACTED in smoke


# ---------------------------------------------------------------------------------- through a bundle


def _bundle(tmp: Path, log: Path, *extra: str) -> tuple[int, Path]:
    out = tmp / "bundle"
    status = main(
        ["bundle", "--cluster", "sim", "--baselines-dir", str(BASELINES), "--reports-dir", str(tmp / "reports"),
         "--out", str(out), "--no-sign", "--job-logs", str(log), *extra]
    )  # fmt: skip
    return status, out


def test_planted_log_forms_reach_neither_the_bundle_nor_its_archive(tmp_path: Path) -> None:
    from tests.incident_logs import write

    (tmp_path / "logs").mkdir()
    logs = write(tmp_path / "logs", only=("xid",))
    log = Path(logs["xid"])
    log.write_text(log.read_text() + "\n".join(line for line, _ in LOG_FORMS.values()) + "\n")
    status, out = _bundle(tmp_path, log)
    assert status == 0
    archive = out.with_name(out.name + ".tar.gz")
    assert archive.is_file()
    blobs = [p.read_bytes() for p in out.rglob("*") if p.is_file()]
    with tarfile.open(archive) as tar:
        blobs += [tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()]  # type: ignore[union-attr]
    for form, (_, secret) in LOG_FORMS.items():
        assert not [b for b in blobs if secret.encode() in b], form
    inputs = "".join(p.read_text() for p in (out / "evidence" / "inputs").iterdir())
    assert inputs.count(REDACTED) >= len(LOG_FORMS)


# ---------------------------------------------------------------------------------- fail closed


def _folder_with_a_raw_token(tmp_path: Path) -> ReportFolder:
    folder = ReportFolder.create(tmp_path / "reports", "sim", datetime(2026, 12, 1, tzinfo=UTC))
    (folder.path / "outputs").mkdir()
    # written around the scrubbing writers, as a tool that copies its own file in would
    (folder.path / "outputs" / "tool.log").write_text(f"ok\nuploading with {GHP}\n")
    return folder


def test_a_folder_that_still_holds_a_credential_is_not_signed(tmp_path: Path, key: Path) -> None:
    folder = _folder_with_a_raw_token(tmp_path)
    result = finalize(folder, None, ReportData(), SignOptions(key=key))
    assert result.refused is not None
    assert "outputs/tool.log:2: GitHub Token" in result.refused
    assert GHP not in result.refused
    assert not any(GHP in p for p in result.problems)
    assert not result.signing.signed
    assert not (folder.path / "MANIFEST.json.sig").exists()
    assert (folder.path / "outputs" / "tool.log").read_text().count(GHP) == 1  # named, not silently changed
    manifest = json.loads((folder.path / "MANIFEST.json").read_text())
    assert manifest["signing"]["signed"] is False
    assert "outputs/tool.log:2" in manifest["signing"]["reason"]


def test_allow_unredacted_lets_a_named_file_through_and_the_manifest_says_so(tmp_path: Path, key: Path) -> None:
    folder = _folder_with_a_raw_token(tmp_path)
    result = finalize(folder, None, ReportData(), SignOptions(key=key), allow_unredacted=["outputs/tool.log"])
    assert result.refused is None
    assert result.signing.signed, result.signing.describe()
    manifest = json.loads((folder.path / "MANIFEST.json").read_text())
    [allowed] = manifest["signing"]["unredacted_allowed"]
    assert allowed.startswith("outputs/tool.log:2: GitHub Token")
    assert allowed.endswith("(let through with --allow-unredacted)")
    from acceptance.report.verify import verify

    said = "\n".join(verify(folder.path).lines())
    assert "let through with --allow-unredacted: outputs/tool.log:2: GitHub Token" in said
    other = finalize(
        _folder_with_a_raw_token(tmp_path / "2"), None, ReportData(), SignOptions(key=key), allow_unredacted=["x"]
    )
    assert other.refused is not None  # only the file named


def test_the_bundle_command_refuses_to_sign_and_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer that wrote around the scrubbing (as a tool copying its own file in would): the scan stops it."""
    from acceptance.report.folder import ReportFolder
    from tests.incident_logs import write

    def raw_add_text(self: ReportFolder, relpath: str, text: str) -> Path:
        target = self._target(relpath)
        target.write_text(text, encoding="utf-8")
        return target

    (tmp_path / "logs").mkdir()
    logs = write(tmp_path / "logs", only=("xid",))
    log = Path(logs["xid"])
    log.write_text(log.read_text() + f"cloning with {GHP} done\n")
    monkeypatch.setattr(ReportFolder, "add_text", raw_add_text)
    status, out = _bundle(tmp_path, log)
    err = capsys.readouterr().err
    assert status == 1
    name = next(p.name for p in (out / "evidence" / "inputs").iterdir() if GHP in p.read_text())
    assert f"evidence/inputs/{name}:" in err
    assert "GitHub Token" in err
    assert GHP not in err
    assert not out.with_name(out.name + ".tar.gz").exists()  # no archive to attach
    status, out = _bundle(tmp_path / "again", log, "--allow-unredacted", f"evidence/inputs/{name}")
    assert status == 0
    assert out.with_name(out.name + ".tar.gz").exists()
    manifest = json.loads((out / "MANIFEST.json").read_text())
    assert any(name in item for item in manifest["signing"]["unredacted_allowed"])


PLANT_PLUGIN = f"""
import pytest
from pathlib import Path


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    folder = Path(session.config.getoption("report_dir"))
    (folder / "outputs").mkdir(parents=True, exist_ok=True)
    (folder / "outputs" / "copied.log").write_text("uploaded with {GHP}\\n")
"""


@pytest.mark.heavy
def test_a_run_whose_report_still_holds_a_credential_fails_unless_the_file_is_allowed(
    pytester: pytest.Pytester,
) -> None:
    """`pytest acceptance/ ...`: a tool's file copied in raw at the end; the scan refuses, the run fails."""
    from tests.suite_run import run_suite

    pytester.makepyfile(plantraw=PLANT_PLUGIN)
    run = run_suite(pytester, "-p", "plantraw", "-k", "test_node_set_ready")
    out = run.result.stdout.str()
    assert run.result.ret != 0, out[-2000:]
    assert "outputs/copied.log:1: GitHub Token" in out
    assert GHP not in out
    assert not (run.report_dir / "MANIFEST.json.sig").exists()
    allowed = run_suite(
        pytester, "-p", "plantraw", "-k", "test_node_set_ready", "--allow-unredacted=outputs/copied.log"
    )
    assert allowed.result.ret == 0, allowed.result.stdout.str()[-2000:]
    manifest = json.loads((allowed.report_dir / "MANIFEST.json").read_text())
    assert manifest["signing"]["unredacted_allowed"][0].startswith("outputs/copied.log:1: GitHub Token")


_names = st.sampled_from(
    ["REDIS_PASSWORD_PRIMARY", "WANDB_KEY", "GITHUB_PAT", "hf_token", "dbPass", "x-api-key", "auth"]
)
_values = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+=", min_size=6, max_size=30
)
_shapes = st.sampled_from(
    ["{n}={v}", "{n}: {v}", "'{n}': '{v}'", '"{n}": "{v}"', "  {n} ........ {v}", "--{n} {v}", "--{n}={v}",
     "- --{n}\n- {v}", '["--{n}", "{v}"]', "Authorization: Bearer {v}", "https://u:{v}@h/x", "{n}: |\n  {v}\nnext: 1"]
)  # fmt: skip


@pytest.mark.heavy
@settings(max_examples=300, deadline=None)
@given(before=st.text(max_size=80), after=st.text(max_size=80), name=_names, value=_values, shape=_shapes)
def test_what_scrubbing_leaves_the_scan_accepts(before: str, after: str, name: str, value: str, shape: str) -> None:
    """The last scan trusts files written through scrub_text: its output must hold no find."""
    assume(not value.startswith("-"))
    assume("://" not in shape or "/" not in value)  # a "/" ends a URL's user:password (it is sent %2F)
    text = f"{before}\n{shape.format(n=name, v=value)}\n{after}"
    scrubbed = scrub_text(text)
    assert find_credentials(scrubbed) == []
    assert value not in scrubbed.replace(before, "").replace(after, "")


@pytest.mark.parametrize(
    "name",
    [
        "train-pre-incident-ra-20261202141957-1842-launcher-bpwdb",  # a Job pod's random suffix holding "pwd"
        "dcgm-sim-node-07-ra-20261202141957-1842-pwdxq",
        "passwordless_login",
        "mysecretthing",
    ],
)
def test_a_keyword_inside_a_word_of_a_name_is_not_a_credentials_name(name: str) -> None:
    """Keywords are whole parts of a name: a healthy report's pod names were redacted now and then before."""
    assert not is_secret_name(name)
    assert is_secret_name("MYSQL_PWD")
    assert is_secret_name("db_pass")
