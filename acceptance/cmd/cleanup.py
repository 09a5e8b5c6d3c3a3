"""`acceptance cleanup --cluster NAME [--older-than DURATION]`: delete what crashed runs left behind.

Every object or process the harness starts carries its run id; this finds those the
profile's cluster still holds and ends them, optionally only those older than DURATION
(``30m``, ``2h``; default: all).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acceptance import clusters
from acceptance.errors import UsageError
from acceptance.units import parse_duration


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cleanup", help="delete cluster objects (Kubernetes) or end processes (SSH hosts) that earlier runs left behind"
    )
    parser.add_argument("--cluster", required=True, metavar="NAME", help="profile name (baselines/NAME/cluster.yaml)")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.add_argument("--older-than", metavar="DURATION", help="only objects older than this (e.g. 30m, 2h)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    parser.add_argument(
        "--include-live", action="store_true",
        help="also delete the objects of runs that still hold their lease (a run in progress, or one killed "
        "less than a lease ago)",
    )  # fmt: skip
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from acceptance.profile import load_profile
    from acceptance.run_session import new_run_id

    profile = load_profile(args.cluster, args.baselines_dir)
    if clusters.backend_of(profile).simulated:
        print(f"{args.cluster}: the simulated cluster lives only as long as its run (its hosts end with the run, "
              "even a killed one); nothing to clean up")  # fmt: skip
        return 0
    try:
        seconds = parse_duration(args.older_than) if args.older_than else None
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None
    cluster = clusters.open(profile, new_run_id(datetime.now(UTC)))
    try:
        found = cluster.remove_leftovers(seconds, dry_run=args.dry_run, include_live=args.include_live)
        spared = [o for o in cluster.leftovers() if o.live_until is not None] if not args.include_live else []
    finally:
        cluster.close()
    for item in found:
        print(("would delete " if args.dry_run else "deleting ") + str(item))
    where = "; ".join(cluster.describe())
    print(f"{len(found)} object(s) {'found' if args.dry_run else 'deleted'} ({where})")
    if spared:
        runs = sorted({f"{o.run_id} (lease until {o.live_until:%Y-%m-%dT%H:%M:%SZ})" for o in spared})
        print(f"{len(spared)} object(s) of live runs kept: {', '.join(runs)}; --include-live deletes them too")
    return 0
