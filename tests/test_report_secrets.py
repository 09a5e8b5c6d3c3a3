"""No credential reaches a report: every text artifact is scrubbed before it is written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acceptance.judge.verdict import Status, Verdict
from acceptance.report.data import ReportData, TestRecord, verdict_payload
from acceptance.report.finalize import finalize
from acceptance.report.folder import ReportFolder
from acceptance.report.secrets import REDACTED, is_secret_name, scrub_obj, scrub_text
from acceptance.report.sign import SignOptions

TOKEN = "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik1UIn0.eyJpc3MiOiJrdWJlcm5ldGVzL3NhIn0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
PLAIN_TOKEN = "kubeadm-abcdef.0123456789abcdef"
CLIENT_KEY = "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVB"
PASSWORD = "correct-horse-battery"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tLS1DRVJUSUZJQ0FURS0tLS0t
    server: https://127.0.0.1:6443
  name: prod-h200
contexts:
- context: {{cluster: prod-h200, user: admin, namespace: acceptance}}
  name: prod-h200
users:
- name: admin
  user:
    token: {PLAIN_TOKEN}
    client-key-data: {CLIENT_KEY}
- name: sa
  user:
    token: "{TOKEN}"
- name: basic
  user:
    username: admin
    password: {PASSWORD}
"""

PEM = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\nabc\n-----END PRIVATE KEY-----\n"
SECRETS = (TOKEN, PLAIN_TOKEN, CLIENT_KEY, PASSWORD, PEM_BODY)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Authorization: Bearer {PLAIN_TOKEN}", PLAIN_TOKEN),
        (f"curl -H 'Authorization: bearer {TOKEN}'", TOKEN),
        (f"HF_TOKEN={PLAIN_TOKEN} NCCL_DEBUG=INFO", PLAIN_TOKEN),
        (f'{{"password": "{PASSWORD}", "user": "x"}}', PASSWORD),
        (f"  client-key-data: {CLIENT_KEY}", CLIENT_KEY),
        (f"url: https://admin:{PASSWORD}@registry.local/v2", PASSWORD),
        (f"log line with a bare jwt {TOKEN} in it", TOKEN),
        (PEM, PEM_BODY),
        (f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----", PEM_BODY),
        (f"private_key: |\n  {PEM_BODY}\n  more\nnext: 1\n", PEM_BODY),
    ],
)
def test_scrub_text_removes_the_secret(text, secret):
    scrubbed = scrub_text(text)
    assert secret not in scrubbed
    assert REDACTED in scrubbed


def test_scrub_keeps_ordinary_content():
    text = "secretName: nccl-env\nNCCL_IB_HCA=mlx5_0\nmax_tokens: 4096\nstep 10 loss 2.31\n"
    assert scrub_text(text) == text
    assert "next: 1" in scrub_text(f"password: |\n  {PASSWORD}\nnext: 1\n")


def test_scrub_obj_by_key_name():
    obj = {"users": [{"user": {"token": PLAIN_TOKEN, "name": "a"}}], "env": [f"PASSWORD={PASSWORD}"]}
    assert scrub_obj(obj) == {
        "users": [{"user": {"token": REDACTED, "name": "a"}}],
        "env": [f"PASSWORD={REDACTED}"],
    }
    assert is_secret_name("client-key-data")
    assert not is_secret_name("secretName")


def test_a_report_folder_made_from_secret_bearing_inputs_holds_none(tmp_path: Path):
    source = tmp_path / "kubeconfig"
    source.write_text(KUBECONFIG)
    folder = ReportFolder.create(tmp_path / "reports", "prod-h200", datetime(2026, 1, 2, tzinfo=UTC))
    folder.add_file("evidence/kubeconfig.yaml", source)
    folder.add_text("evidence/launcher.log", f"mpirun -x HF_TOKEN={PLAIN_TOKEN} all_reduce_perf\n{PEM}")
    folder.add_json("evidence/env.json", {"SSH_PASSWORD": PASSWORD, "nested": {"token": TOKEN}})
    folder.add_yaml(
        "manifests/mpijob.yaml",
        {"kind": "MPIJob", "spec": {"env": [{"name": "X", "value": f"Bearer {PLAIN_TOKEN}"}]}},
    )
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<?xml version="1.0"?><testsuites><testsuite tests="1"><testcase name="t">'
        f"<system-out>token: {PLAIN_TOKEN}</system-out></testcase></testsuite></testsuites>"
    )
    verdict = Verdict(Status.FAIL, "kube", f"api said: Unauthorized (Bearer {TOKEN})", {"password": PASSWORD})
    data = ReportData(
        {"cluster": "prod-h200", "kubeconfig": {"users": [{"user": {"token": TOKEN}}]}},
        (
            TestRecord(
                "acceptance/test_preflight.py::test_cluster_answers",
                "failed",
                0.1,
                f"Bearer {TOKEN}",
                (verdict_payload(verdict),),
            ),
        ),
    )
    result = finalize(folder, junit, data, SignOptions(enabled=False))
    assert not result.problems
    files = [p for p in folder.path.rglob("*") if p.is_file()]
    assert len(files) == 8  # 4 evidence files, junit, data, html, manifest
    for path in [*files, junit]:
        content = path.read_bytes().decode("utf-8", "replace")
        for secret in SECRETS:
            assert secret not in content, f"{secret[:12]}... found in {path.name}"
    assert "[REDACTED]" in (folder.path / "evidence" / "kubeconfig.yaml").read_text()
    assert "server: https://127.0.0.1:6443" in (folder.path / "evidence" / "kubeconfig.yaml").read_text()


_noise = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)
_secret = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=12, max_size=40
)
_name = st.sampled_from(["token", "password", "client-key-data", "api_key", "HF_TOKEN", "id-token", "secret"])
_form = st.sampled_from(
    ["{n}: {s}", "  {n}: {s}", '"{n}": "{s}"', "{n}={s}", "- {n}: '{s}'", "Authorization: Bearer {s}"]
)


@pytest.mark.heavy
@settings(max_examples=150, deadline=None)
@given(before=_noise, after=_noise, name=_name, secret=_secret, form=_form)
def test_a_secret_in_any_usual_form_never_survives(before, after, name, secret, form):
    assume(secret not in before and secret not in after)
    text = f"{before}\n{form.format(n=name, s=secret)}\n{after}"
    scrubbed = scrub_text(text)
    assert secret not in scrubbed
    assert scrub_text(scrubbed) == scrubbed  # idempotent: scrubbing a report twice changes nothing


def test_flags_named_like_secrets_survive_but_numbers_do_not():
    """A manifest's `automountServiceAccountToken: false` is evidence, not a credential; a PIN is."""
    text = "automountServiceAccountToken: false\npassword: 1234\ntoken: abcdef123456\n"
    scrubbed = scrub_text(text)
    assert "automountServiceAccountToken: false" in scrubbed
    assert "1234" not in scrubbed
    assert "abcdef123456" not in scrubbed
    assert scrub_obj({"automountServiceAccountToken": False, "pin_password": 1234}) == {
        "automountServiceAccountToken": False,
        "pin_password": "[REDACTED]",
    }


PLANTED = {
    "HF_TOKEN": "hf_plantedAAAAAAAAAAAAAAAAAAAAAAAA",
    "WANDB_API_KEY": "wandb0123456789plantedBBBBBBBB",
    "AWS_SECRET_ACCESS_KEY": "awsPlantedSecretCCCCCCCCCCCCCCCCCCCC",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTEDDDDDDDDDD",
    "NGC_API_KEY": "ngcPlantedEEEEEEEEEEEEEEEE",
    "DB_PASSWORD": "planted-password-FFFF",
    "GITHUB_TOKEN": "ghp_plantedGGGGGGGGGGGGGGGGGGGG",
}


def test_kubernetes_env_entries_are_redacted_by_their_name() -> None:
    """Env entries are name/value pairs: scrubbing by key alone let all seven values through."""
    env = [{"name": name, "value": value} for name, value in PLANTED.items()] + [
        {"name": "NCCL_DEBUG", "value": "INFO"}
    ]
    scrubbed = scrub_obj({"containers": [{"env": env}]})
    values = {e["name"]: e["value"] for e in scrubbed["containers"][0]["env"]}
    assert values == {**dict.fromkeys(PLANTED, "[REDACTED]"), "NCCL_DEBUG": "INFO"}


@pytest.mark.heavy
def test_a_suite_run_with_secrets_in_the_profile_writes_none_of_them(pytester: pytest.Pytester) -> None:
    """Plant credentials in kube.env and smoke.env (and one as a Secret reference); grep the whole report."""
    import yaml

    from tests.suite_run import run_suite, sim_cluster_folder

    folder = sim_cluster_folder(pytester.path)
    profile = yaml.safe_load((folder / "cluster.yaml").read_text())
    names = list(PLANTED)
    profile["kube"]["env"].update({n: PLANTED[n] for n in names[:4]})
    profile["smoke"]["env"] = {n: PLANTED[n] for n in names[4:]}
    profile["smoke"]["env"]["HF_HOME_TOKEN"] = {"valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
    (folder / "cluster.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    run = run_suite(pytester, "-k", "all_reduce or smoke")
    assert run.result.ret == 0, run.result.stdout.str()[-2000:]
    files = [p for p in run.report_dir.rglob("*") if p.is_file()] + [run.junit]
    assert len(files) > 10
    for path in files:
        data = path.read_bytes()
        leaked = [name for name, value in PLANTED.items() if value.encode() in data]
        assert not leaked, f"{path}: {leaked}"
    smoke = (run.report_dir / "manifests" / "training" / "smoke.yaml").read_text()
    assert "secretKeyRef" in smoke, "a Secret reference is submitted as a reference"
    assert "[REDACTED]" in (run.report_dir / "manifests" / "nccl" / "all_reduce_perf.yaml").read_text()


def test_a_profile_secret_value_anywhere_in_the_folder_is_redacted_before_signing(tmp_path: Path) -> None:
    """The last line of defence: a tool that echoes a token into its log, under no secret-looking name."""
    folder = ReportFolder.create(tmp_path / "reports", "sim", datetime(2026, 12, 1, tzinfo=UTC))
    token = PLANTED["HF_TOKEN"]
    (folder.path / "outputs").mkdir()
    (folder.path / "outputs" / "train.log").write_text(f"step 1 loss 2.3\ndownloading with {token}\n")
    (folder.path / "blob.bin").write_bytes(b"\x00\xff" + token.encode() + b"\x00")
    junit = tmp_path / "junit.xml"
    junit.write_text(f'<testsuites><testsuite><property name="note" value="{token}"/></testsuite></testsuites>')
    result = finalize(folder, junit, ReportData(), SignOptions(enabled=False), secrets={"HF_TOKEN": token})
    for path in [*folder.path.rglob("*"), junit]:
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    assert "step 1 loss 2.3" in (folder.path / "outputs" / "train.log").read_text()
    found = [p for p in result.problems if p.startswith("secret found in")]
    assert any("outputs/train.log: the value of HF_TOKEN" in p for p in found)
    assert any("junit.xml: the value of HF_TOKEN" in p for p in found)
