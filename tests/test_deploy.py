"""Running inside the cluster: least RBAC, a Job and a CronJob valid for Kubernetes, the image, a CI gate."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance import criteria
from acceptance.options import OPTIONS, env_name
from tests.served import served_cluster
from tests.shared import SHARED, needs_shared
from tests.suite_process import run_pytest
from tests.suite_run import copy_agreement

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"
SERVICE_ACCOUNT = "recovery-acceptance"

# Granted but not seen in a healthy run, each for a reason the code has (kube backend): a create that
# landed before a retried request is read back (get); `acceptance cleanup` deletes a crashed run's orphans.
RARELY_USED = {
    ("batch", "jobs", "get"): "read back a Job whose create landed before a retried request",
    ("kubeflow.org", "mpijobs", "get"): "read back an MPIJob whose create landed before a retried request",
    ("", "pods", "delete"): "acceptance cleanup: a crashed run's pods",
}


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def all_documents() -> list[dict[str, Any]]:
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in documents(path)]


def pod_specs() -> list[dict[str, Any]]:
    out = []
    for doc in all_documents():
        if doc["kind"] == "Job":
            out.append(doc["spec"]["template"]["spec"])
        elif doc["kind"] == "CronJob":
            out.append(doc["spec"]["jobTemplate"]["spec"]["template"]["spec"])
    return out


@pytest.mark.parametrize("doc", all_documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_manifests_are_valid_kubernetes_1_30_objects(doc: dict[str, Any]) -> None:
    import kubernetes_validate

    kubernetes_validate.validate(doc, "1.30.0", strict=True)


@needs_shared
def test_the_job_validates_against_the_strict_schema_of_the_shared_reference() -> None:
    import jsonschema

    schema = json.loads((SHARED / "k8s" / "schemas" / "v1.30.10-standalone-strict" / "job-batch-v1.json").read_text())
    job = next(d for d in documents(K8S / "job.yaml") if d["kind"] == "Job")
    assert list(jsonschema.Draft7Validator(schema).iter_errors(job)) == []


def test_every_workload_runs_as_the_account_the_rbac_binds() -> None:
    docs = all_documents()
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    assert accounts == {SERVICE_ACCOUNT}
    for binding in (d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT,
                                        "namespace": "recovery-acceptance"}]  # fmt: skip
    specs = pod_specs()
    assert len(specs) == 2
    for spec in specs:
        assert spec["serviceAccountName"] == SERVICE_ACCOUNT
        assert spec["restartPolicy"] == "Never"
        assert spec["securityContext"]["runAsNonRoot"] is True


def test_the_in_cluster_runs_use_only_settings_the_plugin_knows() -> None:
    known = {env_name(option) for option in OPTIONS} | {"HOME"}
    for spec in pod_specs():
        (container,) = spec["containers"]
        names = {e["name"] for e in container["env"]}
        assert names <= known, names - known
        assert {"ACCEPTANCE_CLUSTER", "ACCEPTANCE_BASELINES_DIR", "ACCEPTANCE_SIGN_KEY"} <= names
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        env = {e["name"]: e["value"] for e in container["env"]}
        cluster = env["ACCEPTANCE_CLUSTER"]
        assert f"{env['ACCEPTANCE_BASELINES_DIR']}/{cluster}" in mounts, "the profile's folder is mounted"
        assert str(Path(env["ACCEPTANCE_SIGN_KEY"]).parent) in mounts
        assert container.get("workingDir") in mounts, "reports are written to the volume"
    cron = next(d for d in all_documents() if d["kind"] == "CronJob")
    command = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    module = command[command.index("--pyargs") + 1]
    assert criteria.by_module(module.rsplit(".", 1)[-1]).number == 5


def test_the_image_installs_the_package_and_runs_the_suite() -> None:
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (?!--from)(.+) \S+$", text, flags=re.M):
        for path in source.split():
            assert (ROOT / path).exists(), path
    assert "openssh-client" in text, "ssh-keygen signs the reports"
    assert re.search(r"^USER \d+", text, flags=re.M), "runs as a non-root user, as the Job asks"
    entry = json.loads(re.search(r"^ENTRYPOINT (.+)$", text, flags=re.M).group(1))  # type: ignore[union-attr]
    assert entry[:3] == ["pytest", "--pyargs", "acceptance"]


def test_the_ci_example_gates_on_the_suite_and_keeps_the_signed_report() -> None:
    workflow = yaml.safe_load((DEPLOY / "ci" / "github-actions.yml").read_text())
    steps = workflow["jobs"]["accept"]["steps"]
    gate = next(s for s in steps if "pytest --pyargs acceptance" in s.get("run", ""))
    assert "if" not in gate, "the gate's exit status fails the job"
    for flag in ("--junitxml=", "--sign-key=", "--baselines-dir="):
        assert flag in gate["run"]
    keep = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    verify = next(s for s in steps if "acceptance verify" in s.get("run", ""))
    assert keep["if"] == verify["if"] == "always()"
    env = workflow["jobs"]["accept"]["env"]
    assert set(env) <= {env_name(option) for option in OPTIONS}


def _granted() -> dict[tuple[str, str], set[tuple[str, str, str]]]:
    """scope ("namespaced" or "cluster") → (group, resource, verb) the RBAC grants."""
    out: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for doc in documents(K8S / "rbac.yaml"):
        if doc["kind"] not in ("Role", "ClusterRole"):
            continue
        scope = ("namespaced", doc["metadata"]["namespace"]) if doc["kind"] == "Role" else ("cluster", "")
        for rule in doc["rules"]:
            out.setdefault(scope, set()).update(
                (g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
            )
    return out


@pytest.mark.slow
def test_the_rbac_grants_exactly_what_a_whole_run_and_its_cleanup_use(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    with served_cluster(tmp_path, "--time-scale", "0.002", "--audit-log", str(audit)) as kubeconfig:
        data = yaml.safe_load((ROOT / "baselines" / "sim" / "cluster.yaml").read_text())
        data.update(cluster="remote", backend="kube")
        del data["sim"]
        data["kube"]["kubeconfig"] = str(kubeconfig)
        data["kube"]["lease"] = "3s"  # renewed every second: a run of any length uses the lease's patch
        folder = tmp_path / "baselines" / "remote"
        folder.mkdir(parents=True)
        (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        copy_agreement(folder)
        env = {**os.environ, "ACCEPTANCE_BASELINES_DIR": str(tmp_path / "baselines")}
        run = run_pytest([str(ROOT / "acceptance"), "--cluster=remote", "--no-sign", "-q", "-p", "no:cacheprovider",
                          f"--report-dir={tmp_path / 'report'}"], tmp_path, env=env, timeout=600)  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        cleanup = subprocess.run(
            [sys.executable, "-m", "acceptance", "cleanup", "--cluster", "remote", "--baselines-dir",
             str(tmp_path / "baselines")],
            capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
        )  # fmt: skip
        assert cleanup.returncode == 0, cleanup.stderr
    namespace = data["kube"]["namespace"]
    used: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for line in audit.read_text().splitlines():
        access = json.loads(line)
        scope = ("namespaced", access["namespace"]) if access["namespace"] else ("cluster", "")
        used.setdefault(scope, set()).add((access["group"], access["resource"], access["verb"]))
    granted = _granted()
    assert set(used) == {("namespaced", namespace), ("cluster", "")}
    for scope, needed in used.items():
        assert needed <= granted.get(scope, set()), f"{scope}: not granted {needed - granted.get(scope, set())}"
    unused = {access for scope, rules in granted.items() for access in rules - used.get(scope, set())}
    assert unused == set(RARELY_USED), f"granted, never used, no reason given: {unused - set(RARELY_USED)}"
