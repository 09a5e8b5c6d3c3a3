"""`acceptance cleanup --cluster NAME [--older-than DURATION]`: delete what crashed runs left behind.

Every object the harness creates carries ``app.kubernetes.io/managed-by=recovery-acceptance``;
this lists them in the profile's namespace and deletes them (foreground propagation),
optionally only those older than DURATION (``30m``, ``2h``; default: all).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acceptance.clusters.kube_cleanup import delete_labelled, list_labelled, older_than
from acceptance.clusters.kube_client import KubeApi, build_api_client
from acceptance.clusters.kube_settings import KubeSettings, parse_seconds
from acceptance.errors import UsageError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("cleanup", help="delete Kubernetes objects that earlier runs left behind")
    parser.add_argument("--cluster", required=True, metavar="NAME", help="profile name (baselines/NAME/cluster.yaml)")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.add_argument("--older-than", metavar="DURATION", help="only objects older than this (e.g. 30m, 2h)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    parser.set_defaults(func=_run)


def cleanup_cluster(
    settings: KubeSettings, older_than_s: float | None, api_client: Any | None = None, dry_run: bool = False
) -> int:
    """Delete the harness's labelled objects (older than `older_than_s`); the number deleted."""
    api = KubeApi(api_client if api_client is not None else build_api_client(settings), settings.api_retry)
    found = older_than(list_labelled(api, settings.namespace), older_than_s)
    for item in found:
        print(("would delete " if dry_run else "deleting ") + str(item))
    if dry_run:
        return 0
    return delete_labelled(api, settings.namespace, found)


def _run(args: argparse.Namespace) -> int:
    from acceptance.profile import load_profile

    profile = load_profile(args.cluster, args.baselines_dir)
    if profile.backend == "sim":
        print(f"{args.cluster}: the simulated cluster lives only as long as its run; nothing to clean up")
        return 0
    if profile.backend != "kube":
        raise UsageError(f"{args.cluster}: cleanup applies to Kubernetes profiles (this one is {profile.backend})")
    kube = profile.kube
    settings = kube if isinstance(kube, KubeSettings) else KubeSettings.from_mapping(
        kube if isinstance(kube, Mapping) else {}, str(profile.path))  # fmt: skip
    seconds = parse_seconds(args.older_than, "--older-than") if args.older_than else None
    deleted = cleanup_cluster(settings, seconds, dry_run=args.dry_run)
    print(f"{deleted} object(s) deleted from namespace {settings.namespace}")
    return 0
