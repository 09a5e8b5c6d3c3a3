"""`acceptance init NAME --context CTX --namespace NS [--nodes SELECTOR]`: a first profile from a live cluster.

Writes ``<baselines-dir>/NAME/cluster.yaml`` (never over an existing file), checks it like
`acceptance profile check`, and says what it could not find and what to do about it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from acceptance.errors import UsageError
from acceptance.profile import PROFILE_FILE, load_profile_file


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("init", help="draft baselines/NAME/cluster.yaml from a live cluster")
    parser.add_argument("name", help="the cluster's name in this harness (baselines/NAME/)")
    parser.add_argument("--context", metavar="CTX", help="kubeconfig context (default: the current one)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--namespace", default="recovery-acceptance", metavar="NS",
                        help="namespace the suite's workloads run in (default: recovery-acceptance)")  # fmt: skip
    parser.add_argument(
        "--nodes", metavar="SELECTOR", help="label selector of the agreement's nodes (default: GPU nodes)"
    )
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from acceptance import clusters

    if not args.name or "/" in args.name or args.name.startswith("."):
        raise UsageError(f"{args.name!r} is not a cluster name (a folder name under {args.baselines_dir})")
    target = args.baselines_dir / args.name / PROFILE_FILE
    if target.exists():
        raise UsageError(f"{target} exists; acceptance init never overwrites a profile (move it away first)")
    draft = clusters.draft_profile(
        args.name, "kube", namespace=args.namespace, context=args.context, kubeconfig=args.kubeconfig,
        node_selector=args.nodes,
    )  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(draft.text)
    except FileExistsError:
        raise UsageError(f"{target} appeared meanwhile; acceptance init never overwrites a profile") from None
    profile = load_profile_file(target)
    print(f"{target}: {len(profile.nodes)} nodes x {profile.gpus_per_node} GPUs; profile check passed")
    for note in draft.notes:
        print(f"  note: {note}")
    print(f"next: review it, then record the handover baseline: pytest acceptance/ --cluster={args.name} "
          f"--baselines-dir={args.baselines_dir} --record-baseline")  # fmt: skip
    return 0
