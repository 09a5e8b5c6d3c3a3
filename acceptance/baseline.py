"""The handover baseline: what later runs are judged against.

A baseline is plain JSON (``acceptance/schemas/baseline.schema.json``): provenance,
the conditions it was recorded under, the results, and the margins agreed then.
Files are named ``handover-<UTC>.json``, written atomically, never overwritten; the
sha256 of the loaded bytes goes into every report. A baseline names the cluster it belongs to
(``identity``: the profile's name, the provider's cluster id, the node set); an amendment names
the file it amends, with that file's sha256 and its signature's sha256, so the amendments form one
chain back to the recorded baseline.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acceptance import schemas
from acceptance.errors import BaselineError
from acceptance.margins import Margins
from acceptance.yamlsrc import format_path

if TYPE_CHECKING:
    from acceptance.profile import Profile

FORMAT = "recovery-acceptance-baseline/1"
PREFIX = "handover-"
STAMP = "%Y%m%dT%H%M%SZ"
_NAME = re.compile(r"^handover-(\d{8}T\d{6}Z)\.json$")


@dataclass(frozen=True)
class Identity:
    """Which cluster an agreement belongs to: the profile's name, the provider's cluster id, the node set."""

    cluster: str
    provider_cluster_id: str | None
    nodes: tuple[str, ...]

    @classmethod
    def of_profile(cls, profile: Profile) -> Identity:
        return cls(profile.name, profile.provider.get("cluster_id"), tuple(profile.nodes))

    def to_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "provider_cluster_id": self.provider_cluster_id, "nodes": list(self.nodes)}

    def describe(self, no_id: str = "(none)") -> str:
        shown = ", ".join(self.nodes[:4]) + (f", ... ({len(self.nodes)} nodes)" if len(self.nodes) > 4 else "")
        return f"cluster {self.cluster!r}, provider cluster id {self.provider_cluster_id or no_id}, nodes {shown}"

    def differences(self, other: Identity, *, check_provider_id: bool = True) -> list[str]:
        """What differs between this identity (a baseline's) and `other` (a profile's), in words."""
        out = []
        if self.cluster != other.cluster:
            out.append(f"cluster {self.cluster!r} in the baseline, {other.cluster!r} in the profile")
        if check_provider_id and self.provider_cluster_id != other.provider_cluster_id:
            out.append(f"provider cluster id {self.provider_cluster_id or '(none)'} in the baseline, "
                       f"{other.provider_cluster_id or '(none)'} in the profile")  # fmt: skip
        only_baseline = [n for n in self.nodes if n not in other.nodes]
        only_profile = [n for n in other.nodes if n not in self.nodes]
        if only_baseline:
            out.append(f"nodes {', '.join(only_baseline)} only in the baseline")
        if only_profile:
            out.append(f"nodes {', '.join(only_profile)} only in the profile")
        return out


@dataclass(frozen=True)
class NodeSpec:
    """The worker node spec both sides agreed on."""

    gpu_product: str | None
    gpus_per_node: int
    driver_version: str | None
    cuda_version: str | None
    os_image: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu_product": self.gpu_product,
            "gpus_per_node": self.gpus_per_node,
            "driver_version": self.driver_version,
            "cuda_version": self.cuda_version,
            "os_image": self.os_image,
        }


@dataclass(frozen=True)
class ClusterConditions:
    """Cluster-wide conditions; per-tool conditions live in their own sections."""

    nodes: tuple[str, ...]
    kubernetes_version: str | None
    node_spec: NodeSpec

    def differences(self, then: ClusterConditions) -> list[str]:
        """Each difference of today (`self`) against the baseline (`then`), in words."""
        out: list[str] = []
        _differ(out, "Kubernetes", self.kubernetes_version, then.kubernetes_version)
        _differ(out, "GPU model", self.node_spec.gpu_product, then.node_spec.gpu_product)
        _differ(out, "GPUs per node", self.node_spec.gpus_per_node, then.node_spec.gpus_per_node)
        _differ(out, "NVIDIA driver", self.node_spec.driver_version, then.node_spec.driver_version)
        _differ(out, "CUDA", self.node_spec.cuda_version, then.node_spec.cuda_version)
        _differ(out, "OS image", self.node_spec.os_image, then.node_spec.os_image)
        added = [n for n in self.nodes if n not in then.nodes]
        removed = [n for n in then.nodes if n not in self.nodes]
        if added:
            out.append(f"nodes {', '.join(added)} now, not in the node set at handover")
        if removed:
            out.append(f"nodes {', '.join(removed)} at handover, missing now")
        return out


def _differ(out: list[str], what: str, now: object, then: object) -> None:
    if now is None or then is None or now == then:
        return
    out.append(f"{what} {now} now, {then} at handover")


@dataclass(frozen=True)
class Baseline:
    """A validated baseline document; tool sections stay JSON for the tool modules to read."""

    data: Mapping[str, Any]

    @property
    def cluster(self) -> str:
        return str(self.data["cluster"])

    @property
    def identity(self) -> Identity | None:
        """The cluster this agreement belongs to; None for a baseline recorded before baselines named it."""
        found = self.data.get("identity")
        if found is None:
            return None
        return Identity(str(found["cluster"]), found.get("provider_cluster_id"), tuple(found["nodes"]))

    @property
    def amendment(self) -> Mapping[str, Any] | None:
        """What this baseline amends (``provenance.amended``), or None for a recorded baseline."""
        found = self.data["provenance"].get("amended")
        return dict(found) if found else None

    @property
    def provenance(self) -> Mapping[str, Any]:
        return dict(self.data["provenance"])

    @property
    def conditions(self) -> ClusterConditions:
        c = self.data["conditions"]
        spec = c["node_spec"]
        return ClusterConditions(
            nodes=tuple(c["nodes"]),
            kubernetes_version=c.get("kubernetes_version"),
            node_spec=NodeSpec(
                gpu_product=spec.get("gpu_product"),
                gpus_per_node=int(spec["gpus_per_node"]),
                driver_version=spec.get("driver_version"),
                cuda_version=spec.get("cuda_version"),
                os_image=spec.get("os_image"),
            ),
        )

    def nccl_conditions(self, name: str) -> Mapping[str, Any] | None:
        found = self.data["conditions"]["nccl"].get(name)
        return dict(found) if found is not None else None

    def nccl_run(self, name: str) -> Mapping[str, Any] | None:
        found = self.data["results"]["nccl"].get(name)
        return dict(found) if found is not None else None

    @property
    def nccl_names(self) -> tuple[str, ...]:
        return tuple(self.data["results"]["nccl"])

    @property
    def dcgm_conditions(self) -> Mapping[str, Any] | None:
        found = self.data["conditions"].get("dcgm")
        return dict(found) if found else None

    def dcgm_report(self, node: str) -> Mapping[str, Any] | None:
        found = self.data["results"]["dcgm"].get(node)
        return dict(found) if found is not None else None

    @property
    def smoke_step_times(self) -> tuple[float, ...] | None:
        smoke = self.data["results"].get("smoke")
        return tuple(float(x) for x in smoke["step_time_s"]) if smoke else None

    @property
    def agreed_utc(self) -> datetime:
        """When this agreement was made: its recording, or its amendment."""
        provenance = self.data["provenance"]
        text = (provenance.get("amended") or {}).get("utc") or provenance["recorded_utc"]
        return datetime.strptime(text.split(".")[0].rstrip("Z"), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)

    @property
    def margins(self) -> Margins:
        """The margins agreed at handover, which later runs judge with."""
        try:
            return Margins.from_json(self.data["margins"])
        except (TypeError, ValueError) as exc:
            raise BaselineError(f"margins: {exc}") from None

    @property
    def simulated(self) -> bool:
        return bool(self.data["provenance"]["simulated"])


@dataclass(frozen=True)
class LoadedBaseline:
    path: Path
    sha256: str
    baseline: Baseline


def validate(data: Any, source: str) -> Baseline:
    """Check a baseline document against the schema; every problem is listed."""
    if not isinstance(data, dict):
        raise BaselineError(f"{source}: expected a JSON object at the top level")
    found = [
        f"{format_path(path)}: found {what}, expected {expected}"
        for path, what, expected in schemas.problems("baseline", data)
    ]
    if found:
        raise BaselineError(f"{source}: not a valid baseline:\n" + "\n".join(f"  {p}" for p in found))
    identity = data.get("identity")
    if identity is not None and identity["cluster"] != data["cluster"]:
        raise BaselineError(
            f"{source}: not a valid baseline: identity.cluster {identity['cluster']!r} and cluster "
            f"{data['cluster']!r} disagree"
        )
    return Baseline(data=data)


def load(path: Path) -> LoadedBaseline:
    """Read, hash and validate one baseline file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the baseline ({exc.strerror})") from exc
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", 0)
        raise BaselineError(f"{path}:{line}: not valid JSON ({exc})") from exc
    except RecursionError:
        raise BaselineError(f"{path}: not a baseline: its JSON nests deeper than the interpreter can read") from None
    return LoadedBaseline(path=path, sha256=hashlib.sha256(raw).hexdigest(), baseline=validate(data, str(path)))


class BaselineStore:
    """The dated baseline files of one cluster: ``<baselines_dir>/<cluster>/handover-*.json``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def files(self) -> list[Path]:
        """The baseline files, named as the store names them (``handover-<UTC>.json``); copies are ignored."""
        return sorted(p for p in self.folder.glob(f"{PREFIX}*.json") if _NAME.match(p.name))

    def latest(self) -> LoadedBaseline:
        """The baseline agreed last, by the time recorded inside it (amended: the amendment's time).

        A file whose name does not carry that time (a renamed copy) or that is not a valid baseline
        stops the run: nothing in the store is skipped silently.
        """
        found = []
        for path in self.files():
            loaded = load(path)
            when = loaded.baseline.agreed_utc
            stamp = _NAME.match(path.name).group(1)  # type: ignore[union-attr]
            if when.strftime(STAMP) != stamp:
                raise BaselineError(
                    f"{path}: its name says {stamp} but it was agreed at {utc_stamp(when)}: a renamed or copied "
                    "baseline; move it out of the store"
                )
            found.append((when, path.name, loaded))
        if not found:
            raise BaselineError(
                f"no handover baseline in {self.folder}: record one at handover with "
                f"`pytest acceptance/ --cluster={self.folder.name} --record-baseline`"
            )
        return max(found, key=lambda item: item[:2])[2]

    def write(self, data: Mapping[str, Any], when: datetime) -> Path:
        """Validate and write a new dated baseline; an existing file is never replaced."""
        validate(dict(data), "the new baseline")
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{PREFIX}{when.astimezone(UTC).strftime(STAMP)}.json"
        payload = (json.dumps(data, indent=1, sort_keys=False) + "\n").encode()
        fd, tmp = tempfile.mkstemp(prefix=".handover-", suffix=".tmp", dir=self.folder)
        try:
            os.chmod(tmp, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, target)  # fails if the target exists: never overwrite
            except FileExistsError:
                raise BaselineError(f"{target} already exists; a baseline is never overwritten") from None
        finally:
            os.unlink(tmp)
        return target


def amended(
    loaded: LoadedBaseline,
    margins: Margins,
    *,
    reason: str,
    by: str,
    when: datetime,
    identity: Identity | None = None,
) -> dict[str, Any]:
    """A copy of `loaded` whose agreed margins are `margins`, with the change recorded in its provenance.

    The conditions and results stay those of the handover; the provenance says which file
    this replaces (its sha256 and its signature's sha256, null when it is unsigned), every
    margin's old and new value, why, who and when. A baseline recorded before baselines named
    their cluster gets `identity` (the profile's), and that alone is a change worth amending.
    Only amend a baseline that has passed ``baseline_trust.trust``: this function checks nothing
    about where `loaded` came from.
    """
    if not reason.strip():
        raise BaselineError("an amendment needs a reason (--reason TEXT)")
    old = loaded.baseline.margins
    changes = {name: {"old": before, "new": after} for name, before, after in _changed(old, margins)}
    adds_identity = loaded.baseline.identity is None and identity is not None
    if not changes and not adds_identity:
        raise BaselineError(f"{loaded.path.name} already has these margins; nothing to amend")
    doc: dict[str, Any] = json.loads(json.dumps(loaded.baseline.data))
    if adds_identity:
        assert identity is not None
        doc = {"format": doc["format"], "cluster": doc["cluster"], "identity": identity.to_json(), **doc}
    doc["margins"] = margins.to_json()
    doc["provenance"]["amended"] = {
        "from": loaded.path.name,
        "from_sha256": loaded.sha256,
        "from_signature_sha256": signature_sha256(loaded.path),
        "reason": reason.strip(),
        "by": by,
        "utc": utc_stamp(when),
        "margins": changes,
        **({"identity_added": True} if adds_identity else {}),
    }
    return doc


def is_store_name(name: str) -> bool:
    """Whether `name` is a baseline file name the store uses (``handover-<UTC>.json``)."""
    return _NAME.match(name) is not None


def signature_sha256(path: Path) -> str | None:
    """The sha256 of ``<path>.sig`` (the baseline's SSHSIG signature), None when it has none."""
    sig = path.with_name(path.name + ".sig")
    return sha256_of(sig) if sig.is_file() else None


def _changed(old: Margins, new: Margins) -> list[tuple[str, float | int | str, float | int | str]]:
    before, after = old.to_json(), new.to_json()
    return [(name, before[name], after[name]) for name in before if before[name] != after[name]]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def utc_stamp(when: datetime) -> str:
    """ISO 8601 UTC with a Z, as the schema wants it."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
