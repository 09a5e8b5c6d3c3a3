"""`acceptance sim serve` in another process: a Kubernetes API the suite does not own, as a provider's would be."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml

from acceptance.clusters.kube.manifests import managed_selector
from tests.suite_run import copy_agreement

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


@contextmanager
def served_cluster(folder: Path, *options: str) -> Iterator[Path]:
    """Start the standalone emulated cluster with `options`; yield its kubeconfig; stop it after."""
    out = folder / "serve.out"
    with out.open("w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "acceptance", "sim", "serve", *options],
            stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "kubeconfig:" not in out.read_text():
            assert proc.poll() is None, out.read_text()
            assert time.monotonic() < deadline, "the emulator did not start"
            time.sleep(0.1)
        line = next(x for x in out.read_text().splitlines() if x.startswith("kubeconfig:"))
        yield Path(line.split(":", 1)[1].strip())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # never leave the emulator running after the test
            proc.kill()
            proc.wait(timeout=30)


def kube_profile(base: Path, kubeconfig: Path, lease: str | None = None) -> Path:
    data = yaml.safe_load((ROOT / "baselines" / "sim" / "cluster.yaml").read_text())
    data["cluster"] = "remote"
    data["backend"] = "kube"
    del data["sim"]
    data["kube"]["kubeconfig"] = str(kubeconfig)
    if lease:
        data["kube"]["lease"] = lease
    folder = base / "baselines" / "remote"
    folder.mkdir(parents=True)
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    copy_agreement(folder, with_baseline=False)
    return folder


def patiently(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A test's own API call against an emulator that may inject faults: retried, each try bounded."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    for attempt in range(40):
        try:
            return call(*args, _request_timeout=5, **kwargs)
        except ApiException as exc:
            if exc.status not in (429, 500, 502, 503, 504) or attempt == 39:
                raise
        except (HTTPError, OSError):
            if attempt == 39:
                raise
        time.sleep(0.1)
    raise AssertionError("unreachable")


def labelled_objects(kubeconfig: Path) -> list[str]:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubeconfig))
    core, batch, custom = client.CoreV1Api(api), client.BatchV1Api(api), client.CustomObjectsApi(api)
    selector = managed_selector()
    ns = "recovery-acceptance"
    names = [f"pod/{p.metadata.name}" for p in patiently(core.list_namespaced_pod, ns, label_selector=selector).items]
    names += [f"job/{j.metadata.name}" for j in patiently(batch.list_namespaced_job, ns, label_selector=selector).items]
    mpijobs = patiently(
        custom.list_namespaced_custom_object, "kubeflow.org", "v2beta1", ns, "mpijobs", label_selector=selector
    )
    names += [f"mpijob/{m['metadata']['name']}" for m in mpijobs["items"]]
    maps = patiently(core.list_namespaced_config_map, ns, label_selector=selector).items
    return names + [f"configmap/{c.metadata.name}" for c in maps]
