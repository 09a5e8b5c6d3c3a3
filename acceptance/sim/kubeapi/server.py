"""A Kubernetes API server on loopback, backed by the simulator (``--cluster=sim``).

The official client (and ``kubectl``) talk to it through a generated kubeconfig,
exactly as to a real cluster: discovery, nodes, namespaces, pods and their logs,
events, configmaps, ``batch/v1`` Jobs and ``kubeflow.org/v2beta1`` MPIJobs, with
label/field selectors, watches from a resourceVersion (410 Gone when it is too old),
deletion with propagation, and 422 for malformed objects. The controllers live in
``controller.py``, ``jobs.py`` and ``scheduler.py`` (objects in ``store.py``, requests in
``http.py``, admission in ``validate.py``); faults to inject in ``faults.py``.

Built on the standard library's ``ThreadingHTTPServer``: ``kmock`` was evaluated and
not used (it needs aiohttp, has no label/field selectors, resourceVersions or 410s,
and the controllers would still have to be written).
"""

from __future__ import annotations

import argparse
import json
import math
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from acceptance.sim.kubeapi import discovery as disc
from acceptance.sim.kubeapi.controller import Controller
from acceptance.sim.kubeapi.faults import Faults
from acceptance.sim.kubeapi.http import Handler, Server
from acceptance.sim.kubeapi.store import (
    ApiError,
    Obj,
    Store,
    parse_field_selector,
    parse_label_selector,
)
from acceptance.sim.kubeapi.validate import validate
from acceptance.sim.model.images import PullModel
from acceptance.sim.runtime import ToolRunner


class EmulatedApi:
    """The emulated cluster: API server thread + controller thread. Use as a context manager."""

    def __init__(
        self,
        runner: ToolRunner,
        time_scale: float = 0.0,
        faults: Faults | None = None,
        namespaces: Sequence[str] = ("default", "recovery-acceptance"),
        token: str | None = None,
        history: int = 200_000,
        tls: bool = False,
        mpi_operator: bool = True,
        audit_log: Path | None = None,
        image_pull: PullModel | None = None,
    ) -> None:
        """`mpi_operator` False: the cluster serves no kubeflow.org MPIJobs (an operator not installed).
        `audit_log`: each distinct access (RBAC verb, API group, resource, namespace) as a JSON line.
        `image_pull`: how long images take to reach nodes with a cold cache (None: every image is there)."""
        import random

        self.faults = faults or Faults()
        self.tls = tls
        self.token = token if token is not None else secrets.token_hex(16)
        self.store = Store(history)
        self.controller = Controller(self.store, runner, time_scale, self.faults, image_pull)
        self._runner = runner
        self._namespaces = tuple(namespaces)
        self._rng = random.Random(self.faults.seed + 1)
        self._lock = threading.Lock()
        self.requests_count = 0
        self.requests_by_verb: dict[str, int] = {}
        self.blackholed = 0  # requests read and never answered (Faults.blackhole_rate)
        self.mpi_operator = mpi_operator
        self.audit_log = audit_log
        self.accesses: set[tuple[str, str, str, str]] = set()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._dir: Path | None = None
        self.kubeconfig_path = Path()
        self.url = ""
        self.address = ""

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> EmulatedApi:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        for ns in self._namespaces:
            self.store.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                                             "status": {"phase": "Active"}})  # fmt: skip
        self.controller.start(self._runner.nodes())
        server = Server(("127.0.0.1", 0), Handler)
        server.api = self
        self._server = server
        self._dir = Path(tempfile.mkdtemp(prefix="acceptance-kubeapi-"))
        ca = None
        if self.tls:
            import ssl

            ca, key = self_signed(self._dir)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(ca, key)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        self.address = f"127.0.0.1:{server.server_address[1]}"
        self.url = f"{'https' if self.tls else 'http'}://{self.address}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="kubeapi-http", daemon=True
        )
        self._thread.start()
        self.kubeconfig_path = write_kubeconfig(
            self._dir / "kubeconfig", self.url, self.token, self._namespaces[-1], ca
        )

    def close(self) -> None:
        with self.store.cond:
            self.store.stopped = True
            self.store.cond.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.controller.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def api_client(self) -> Any:
        """An official-client ``ApiClient`` for this server (tests, bench)."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig_path))  # type: ignore[no-untyped-call]

    # ------------------------------------------------------------ faults and counters

    def count(self, verb: str) -> None:
        with self._lock:
            self.requests_count += 1
            self.requests_by_verb[verb] = self.requests_by_verb.get(verb, 0) + 1

    def audit(self, verb: str, group: str, resource: str, namespace: str | None) -> None:
        """Note one access as RBAC sees it (verb on group/resource in a namespace, or cluster-wide as "")."""
        key = (verb, group, resource, namespace or "")
        with self._lock:
            if key in self.accesses:
                return
            self.accesses.add(key)
            if self.audit_log is not None:
                with self.audit_log.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(dict(zip(("verb", "group", "resource", "namespace"), key, strict=True))))
                    handle.write("\n")

    def inject(self, rate: float, parts: list[str]) -> bool:
        """Whether this request gets a fault of `rate` (cut, black hole, error); discovery and version are spared."""
        if not rate or parts in (["version"], ["api"], ["apis"]) or len(parts) <= 3:
            return False
        with self._lock:
            return bool(self._rng.random() < rate)

    def hold_unanswered(self, seconds: float) -> None:
        """A black-holed request's silence: counted, then held until the emulator stops, `seconds` at most."""
        with self._lock:
            self.blackholed += 1
        with self.store.cond:
            self.store.cond.wait_for(lambda: bool(self.store.stopped), timeout=seconds)

    def inject_gone(self) -> bool:
        if not self.faults.watch_gone_rate:
            return False
        with self._lock:
            return self._rng.random() < self.faults.watch_gone_rate

    def rng_choice(self, options: Sequence[int]) -> int:
        with self._lock:
            return self._rng.choice(list(options))

    def rng_uniform(self, low: float, high: float) -> float:
        with self._lock:
            return self._rng.uniform(low, high)

    # ------------------------------------------------------------ verbs

    def create(self, res: disc.Resource, namespace: str | None, body: Obj) -> Obj:
        if body.get("apiVersion") != res.api_version or body.get("kind") != res.kind:
            raise ApiError(400, "BadRequest", f"the API version in the data ({body.get('apiVersion')}) and kind "
                           f"({body.get('kind')}) do not match the expected {res.api_version} {res.kind}")  # fmt: skip
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if res.namespaced:
            if meta.get("namespace") not in (None, namespace):
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                               "namespace sent on the request")  # fmt: skip
            if self.store.get("namespaces", "", namespace or "") is None:
                raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
            meta["namespace"] = namespace
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        validate(res.name, body)
        if res.name in ("jobs", "mpijobs", "pods"):
            body["status"] = {"phase": "Pending"} if res.name == "pods" else {}
        return self.store.create(res.name, body)

    def merge_patch(self, res: disc.Resource, namespace: str, name: str, patch: Obj) -> Obj:
        """A JSON merge patch (what a strategic merge patch of plain fields does too); null removes a field."""
        if set(patch) - {"metadata", "data", "spec"}:
            raise ApiError(422, "Invalid", f"the emulator patches metadata, data and spec only, not {sorted(patch)}")

        def merge(target: Obj, change: Obj) -> None:
            for key, value in change.items():
                if value is None:
                    target.pop(key, None)
                elif isinstance(value, dict) and isinstance(target.get(key), dict):
                    merge(target[key], value)
                else:
                    target[key] = value

        found = self.store.update(res.name, namespace, name, lambda obj: merge(obj, patch))
        if found is None:
            raise ApiError(404, "NotFound", f'{res.name} "{name}" not found')
        return found

    def delete(self, res: disc.Resource, namespace: str, name: str, policy: str) -> Obj:
        if policy not in ("Foreground", "Background", "Orphan"):
            raise ApiError(422, "Invalid", f'propagationPolicy: Unsupported value: "{policy}"')
        obj = self.store.delete(res.name, namespace, name, policy)
        if policy == "Foreground":
            return obj
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": name, "kind": res.name, "uid": obj["metadata"]["uid"]}}  # fmt: skip

    def delete_collection(self, res: disc.Resource, namespace: str | None, query: dict[str, str], policy: str) -> Obj:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"))
        items, _ = self.store.list(res.name, namespace, labels, fields)
        deleted = []
        for obj in items:
            meta = obj["metadata"]
            try:
                deleted.append(self.store.delete(res.name, meta.get("namespace", ""), meta["name"], policy))
            except ApiError:
                continue
        return {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": {}, "items": deleted}

    def pod_log(self, namespace: str, name: str, query: dict[str, str]) -> str:
        pod = self.store.require("pods", namespace, name)
        text = self.controller.logs.get((namespace, name))
        if text is None and pod["status"].get("phase") == "Running":
            text = self.controller.running_log(namespace, name)
        if text is None:
            statuses = pod["status"].get("containerStatuses") or ()
            waiting = [s["state"]["waiting"] for s in statuses if "waiting" in s.get("state", {})]
            container = pod["spec"]["containers"][0]["name"]
            if pod["status"].get("phase") == "Pending":
                why = waiting[0].get("reason", "ContainerCreating") if waiting else "ContainerCreating"
                raise ApiError(400, "BadRequest",
                               f'container "{container}" in pod "{name}" is waiting to start: {why}')  # fmt: skip
            text = ""
        tail = query.get("tailLines")
        if tail is not None:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(tail) :]) if int(tail) > 0 else ""
        return text


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A throwaway certificate for 127.0.0.1 (kubectl sends tokens only over TLS)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "recovery-acceptance-kubeapi")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "server.crt", folder / "server.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.touch(mode=0o600)
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


def write_kubeconfig(path: Path, url: str, token: str, namespace: str, ca: Path | None = None) -> Path:
    """A kubeconfig with token auth for the emulator (mode 0600: it holds the token)."""
    import base64

    cluster: dict[str, str] = {"server": url}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sim", "cluster": cluster}],
        "users": [{"name": "sim-admin", "user": {"token": token}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim-admin", "namespace": namespace}}],
        "current-context": "sim",
        "preferences": {},
    }
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def serve(
    runner: ToolRunner,
    time_scale: float,
    faults: Faults | None = None,
    out: Any = None,
    *,
    mpi_operator: bool = True,
    audit_log: Path | None = None,
) -> int:
    """Run the emulator until Ctrl-C, SIGTERM or SIGHUP, printing its kubeconfig path (``acceptance sim serve``);
    then stop it and remove its folder (kubeconfig, server key), which a killed emulator would leave behind."""
    import signal
    import sys

    stream = out or sys.stdout
    stop = threading.Event()
    # SIGINT even where it came ignored (started in the background of a script); SIGHUP unless ignored (nohup)
    hup = () if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN else (signal.SIGHUP,)
    ends = (signal.SIGINT, signal.SIGTERM, *hup)
    before = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in ends}
    try:
        with EmulatedApi(runner, time_scale, faults, tls=True, mpi_operator=mpi_operator, audit_log=audit_log) as api:
            print(
                f"Kubernetes API emulator at {api.url} (simulated cluster, {len(runner.nodes())} nodes)",
                file=stream,
            )
            print(f"kubeconfig: {api.kubeconfig_path}", file=stream)
            print(f"try: kubectl --kubeconfig {api.kubeconfig_path} get nodes,pods,jobs,mpijobs", file=stream)
            stream.flush()
            while not stop.wait(3600):
                pass
            print("stopped", file=stream)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    return 0


def serve_from_args(runner: ToolRunner, args: argparse.Namespace) -> int:
    """`acceptance sim serve`: the options of `add_serve_options` → `serve`."""
    faults = Faults(
        error_rate=args.error_rate, retry_after_s=args.retry_after, latency_s=args.latency,
        watch_drop_s=args.watch_drop,
        watch_gone_rate=args.watch_gone_rate, blackhole_rate=args.blackhole_rate, cut_rate=args.cut_rate,
        seed=args.api_seed,
    )  # fmt: skip
    return serve(runner, args.time_scale, faults, mpi_operator=not args.no_mpi_operator, audit_log=args.audit_log)


def _bounded(name: str, low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number in [low, high], else the form expected."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} {text!r}: expected a number from {low:g} to {high:g}") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"{name} {text!r}: expected a number from {low:g} to {high:g}")
        return value

    return convert


def _whole_seconds(name: str) -> Callable[[str], int]:
    """An argparse type: whole seconds from 0 to 3600 (what an HTTP Retry-After holds), else the form expected."""

    def convert(text: str) -> int:
        if not text.strip().isdigit() or int(text) > 3600:
            raise argparse.ArgumentTypeError(f"{name} {text!r}: expected whole seconds from 0 to 3600")
        return int(text)

    return convert


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-mpi-operator", action="store_true", help="serve no kubeflow.org MPIJob API")
    faults = parser.add_argument_group("API faults (for testing a client)")
    faults.add_argument("--latency", type=_bounded("--latency", 0.0, 3600.0), default=0.0, metavar="S",
                        help="seconds added to every answer")  # fmt: skip
    faults.add_argument("--watch-drop", type=_bounded("--watch-drop", 0.0, 86400.0), default=None, metavar="S",
                        help="watches end within S seconds")  # fmt: skip
    faults.add_argument("--watch-gone-rate", type=_bounded("--watch-gone-rate", 0.0, 1.0), default=0.0,
                        help="share of watch resumptions answered 410, 0 to 1")  # fmt: skip
    faults.add_argument("--blackhole-rate", type=_bounded("--blackhole-rate", 0.0, 1.0), default=0.0,
                        help="share of requests never answered, 0 to 1")  # fmt: skip
    faults.add_argument("--cut-rate", type=_bounded("--cut-rate", 0.0, 1.0), default=0.0,
                        help="share of connections closed without an answer, 0 to 1")  # fmt: skip
    faults.add_argument("--retry-after", type=_whole_seconds("--retry-after"), default=1, metavar="S",
                        help="the Retry-After of a 429 answer, whole seconds 0 to 3600 (default 1)")  # fmt: skip
    faults.add_argument("--api-seed", type=int, default=0, help="seed of the API faults' random choices")
    parser.add_argument(
        "--audit-log", type=Path, metavar="FILE", help="write each distinct API access (verb, group, resource) as JSON"
    )
    parser.add_argument("--time-scale", type=_bounded("--time-scale", 0.0, 1000.0), default=0.002,
                        help="wall seconds per simulated second, 0 to 1000 (default 0.002)")  # fmt: skip
    parser.add_argument("--error-rate", type=_bounded("--error-rate", 0.0, 1.0), default=0.0,
                        help="share of API answers that are 5xx/429, 0 to 1")  # fmt: skip
