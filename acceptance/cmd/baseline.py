"""`acceptance baseline show|verify NAME`, `diff NAME OLD NEW`, `amend NAME --margins-from-profile --reason TEXT`,
`countersign NAME --sign-key KEY` (the other party's signature of the latest baseline)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acceptance.baseline import BaselineStore, Identity, LoadedBaseline, amended, load
from acceptance.errors import BaselineError, UsageError
from acceptance.profile import profile_path, refuse_writing_shipped
from acceptance.report.sign import signature_path
from acceptance.tools.dcgm import DcgmConditions
from acceptance.tools.nccl import NcclConditions
from acceptance.units import format_size


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("baseline", help="inspect handover baselines")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="summarise the latest baseline of a cluster")
    show.add_argument("name")
    show.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    show.set_defaults(func=_show)
    diff = actions.add_parser("diff", help="list what differs between two baselines; exit 1 if anything")
    diff.add_argument("name")
    diff.add_argument("old", help="baseline file (or its name inside the cluster's folder)")
    diff.add_argument("new", help="baseline file (or its name inside the cluster's folder)")
    diff.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    diff.set_defaults(func=_diff)
    check = actions.add_parser(
        "verify", help="check the latest baseline's signature against the profile's allowed signers; exit 1 if not"
    )
    check.add_argument("name")
    check.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    check.set_defaults(func=_verify)
    counter = actions.add_parser(
        "countersign",
        help="the other party signs the latest baseline (<file>.<party>.sig beside it); it must verify first",
    )
    counter.add_argument("name")
    counter.add_argument(
        "--sign-key", type=Path, metavar="KEY", help="the countersigning party's SSH key (default: agent)"
    )
    counter.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    counter.set_defaults(func=_countersign)
    amend = actions.add_parser(
        "amend",
        help="agree new margins: write a new dated baseline with the profile's margins (the old file stays)",
    )
    amend.add_argument("name")
    amend.add_argument(
        "--margins-from-profile", action="store_true", required=True,
        help="take the margins of baselines/NAME/cluster.yaml (the only amendment there is)",
    )  # fmt: skip
    amend.add_argument("--reason", required=True, help="why the agreed margins change (kept in the new baseline)")
    amend.add_argument(
        "--sign-key", type=Path, metavar="KEY", help="SSH key that signs the new baseline (default: agent)"
    )
    amend.add_argument("--no-sign", action="store_true", help="leave the new baseline unsigned (labs only)")
    amend.add_argument(
        "--allow-unsigned-baseline", action="store_true",
        help="amend even though the baseline (or a file it amends) is unsigned (labs only; the chain says so)",
    )  # fmt: skip
    amend.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    amend.set_defaults(func=_amend)


def _show(args: argparse.Namespace) -> int:
    loaded = BaselineStore(profile_path(args.name, args.baselines_dir).parent).latest()
    b = loaded.baseline
    prov = b.provenance
    c = b.conditions
    print(f"{loaded.path} sha256:{loaded.sha256}")
    print(
        f"  recorded {prov['recorded_utc']} by {prov['recorded_by']} with harness {prov['harness_version']}"
        + (" (SIMULATED cluster)" if b.simulated else "")
        + (f"; FORCED: {prov.get('force_reason')}" if prov.get("forced") else "")
    )
    identity = b.identity
    unnamed = "not recorded (a baseline from before baselines named their cluster; amend it to record it)"
    print(f"  identity: {identity.describe() if identity else unnamed}")
    amendment = prov.get("amended")
    if amendment:
        changes = ", ".join(f"{k} {_value(v['old'])} -> {_value(v['new'])}" for k, v in amendment["margins"].items())
        print(f"  margins amended {amendment['utc']} by {amendment['by']} from {amendment['from']}: {changes} "
              f"({amendment['reason']})")  # fmt: skip
    spec = c.node_spec
    print(
        f"  {len(c.nodes)} nodes x {spec.gpus_per_node} {spec.gpu_product}, driver {spec.driver_version}, "
        f"CUDA {spec.cuda_version}, Kubernetes {c.kubernetes_version}"
    )
    for name in b.nccl_names:
        run = b.nccl_run(name) or {}
        rows = run.get("rows", [])
        largest = max(rows, key=lambda r: r["size"]) if rows else None
        best = f", busbw {largest['oop']['busbw']} GB/s at {format_size(largest['size'])}" if largest else ""
        print(f"  nccl {name}: {len(rows)} sizes{best}")
    print(f"  DCGM: {len(b.data['results']['dcgm'])} node reports")
    steps = b.smoke_step_times
    if steps:
        print(f"  smoke: {len(steps)} step times")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from acceptance.baseline_trust import trust
    from acceptance.profile import load_profile

    profile = load_profile(args.name, args.baselines_dir)
    loaded = BaselineStore(profile.path.parent).latest()
    try:
        found = trust(loaded, profile, allow_unsigned=False)
    except BaselineError as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    print(f"OK   {found.line}")
    if found.agreement:
        print(f"agreement: {found.agreement}")
    return 0


def _countersign(args: argparse.Namespace) -> int:
    from acceptance.baseline_trust import trust
    from acceptance.profile import load_profile
    from acceptance.report.countersign import countersign
    from acceptance.report.sign import SignOptions

    profile = load_profile(args.name, args.baselines_dir)
    refuse_writing_shipped(profile.path.parent, "baseline countersign")
    loaded = BaselineStore(profile.path.parent).latest()
    try:  # only the agreement itself is countersigned: a changed, foreign or unsigned file never is
        trust(loaded, profile, allow_unsigned=False)
    except BaselineError as exc:
        raise BaselineError(
            f"baseline countersign: {loaded.path.name} does not verify, not countersigned: {exc}"
        ) from None
    if profile.allowed_signers is None:  # trust() refused it already; for the type checker
        raise UsageError(f"{profile.path} names no allowed_signers")
    sign = SignOptions.from_options(no_sign=False, sign_key=args.sign_key, environ=os.environ)
    done = countersign(loaded.path, sign, profile.allowed_signers, profile.parties)
    try:  # what a run will check, checked now: a countersignature that blocks every run is not kept
        found = trust(load(loaded.path), profile, allow_unsigned=False)
    except BaselineError as exc:
        done.signature.unlink(missing_ok=True)
        raise UsageError(f"the countersignature does not verify, so it was not kept: {exc}") from None
    print(done.line())
    print(f"agreement: {found.agreement}")
    return 0


def _amend(args: argparse.Namespace) -> int:
    from acceptance.baseline_trust import check_signer, sign_baseline, trust
    from acceptance.criteria.recording import who
    from acceptance.profile import load_profile
    from acceptance.report.sign import SignOptions

    profile = load_profile(args.name, args.baselines_dir)
    refuse_writing_shipped(profile.path.parent, "baseline amend")
    store = BaselineStore(profile.path.parent)
    loaded = store.latest()
    try:  # only the agreement itself is amended: a changed, foreign or unsigned file never becomes a signed one
        trust(loaded, profile, allow_unsigned=args.allow_unsigned_baseline)
    except BaselineError as exc:
        raise BaselineError(f"baseline amend: {loaded.path.name} does not verify, not amended: {exc}") from None
    when = datetime.now(UTC)
    changes = profile.margins.differences(loaded.baseline.margins)
    sign = SignOptions.from_options(no_sign=args.no_sign, sign_key=args.sign_key, environ=os.environ)
    problem = check_signer(sign, profile.allowed_signers, must_sign=True)
    if problem:
        raise UsageError(f"the amended baseline could not be signed: {problem}; nothing was written")
    identity = Identity.of_profile(profile)
    doc = amended(loaded, profile.margins, reason=args.reason, by=who(), when=when, identity=identity)
    path = store.write(doc, when)
    signed = sign_baseline(path, sign)
    if sign.enabled and not signed.signed:
        path.unlink()
        raise UsageError(f"the amended baseline could not be signed, so it was not kept: {signed.describe()}")
    if signed.signed:
        try:  # what a run will check, checked now: a new baseline that blocks every run is not kept
            trust(load(path), profile, allow_unsigned=args.allow_unsigned_baseline)
        except BaselineError as exc:
            signature_path(path).unlink(missing_ok=True)
            path.unlink()
            raise UsageError(f"the amended baseline does not verify, so it was not kept: {exc}") from None
    print(f"{path}: new baseline, {signed.describe()}; {loaded.path.name} (sha256:{loaded.sha256[:12]}…) is kept")
    for _, what, new, old in changes:
        print(f"  {what}: {old} -> {new}")
    if doc["provenance"]["amended"].get("identity_added"):
        print(f"  identity recorded: {identity.describe()}")
    print(f"  reason: {args.reason.strip()}")
    return 0


def _resolve(name: str, folder: Path) -> LoadedBaseline:
    path = Path(name)
    if not path.is_file() and (folder / name).is_file():
        path = folder / name
    if not path.is_file():
        raise BaselineError(f"{name}: no such baseline file (looked in . and {folder})")
    return load(path)


def _diff(args: argparse.Namespace) -> int:
    folder = profile_path(args.name, args.baselines_dir).parent
    old, new = _resolve(args.old, folder), _resolve(args.new, folder)
    old_c, new_c = old.baseline.data["conditions"], new.baseline.data["conditions"]
    differences = new.baseline.conditions.differences(old.baseline.conditions)
    if old_c.get("dcgm") and new_c.get("dcgm"):
        then, now = DcgmConditions.from_json(old_c["dcgm"]), DcgmConditions.from_json(new_c["dcgm"])
        differences += now.differences(then)
    for name in sorted(set(old_c["nccl"]) | set(new_c["nccl"])):
        if name not in new_c["nccl"]:
            differences.append(f"nccl test {name} only in {old.path.name}")
        elif name not in old_c["nccl"]:
            differences.append(f"nccl test {name} only in {new.path.name}")
        else:
            now_n, then_n = _nccl(new_c["nccl"][name]), _nccl(old_c["nccl"][name])
            differences += [f"{name}: {line}" for line in now_n.differences(then_n)]
    from acceptance.criteria.smoke import launch_difference

    smoke = launch_difference((new_c.get("smoke") or {}).get("launch"), old_c.get("smoke"))
    differences += [f"smoke job: {smoke}"] if smoke else []
    print(f"{old.path.name} (older, 'at handover') -> {new.path.name} (newer, 'now')")
    if not differences:
        print("  same conditions")
        return 0
    for line in differences:
        print(f"  {line}")
    return 1


def _nccl(doc: Mapping[str, Any]) -> NcclConditions:
    return NcclConditions.from_json({k: v for k, v in doc.items() if k not in ("argv", "env")})


def _value(value: object) -> str:
    """An amended margin's value: numbers as ``%g``, a stopping rule's name as it is."""
    return f"{value:g}" if isinstance(value, int | float) else str(value)
