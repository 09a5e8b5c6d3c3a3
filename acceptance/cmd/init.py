"""`acceptance init NAME --context CTX --namespace NS [--nodes SELECTOR]`: a first profile from a live cluster;
`acceptance init NAME --hosts FILE|LIST [--user U] [--key K] [--known-hosts F] ...`: the same from SSH hosts;
`acceptance init NAME --slurm --partition P [--login HOST] [--account A]`: the same from a Slurm controller.

Writes ``<baselines-dir>/NAME/cluster.yaml`` (never over an existing file), checks it like
`acceptance profile check` (a draft that fails the check is not kept), and says what it could not
find and what to do about it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from acceptance.errors import ProfileError, UsageError
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
    ssh = parser.add_argument_group("bare metal over SSH (instead of Kubernetes)")
    ssh.add_argument(
        "--hosts", metavar="FILE|LIST",
        help="the hosts: a file (one per line, # comments) or a comma-separated list; each NAME=ADDRESS[:PORT] "
        "or ADDRESS (the name is the address); the first is the head node",
    )  # fmt: skip
    ssh.add_argument("--user", help="SSH user (default: the ssh config's, else yours)")
    ssh.add_argument("--port", type=int, help="SSH port (default: the ssh config's, else 22)")
    ssh.add_argument("--key", type=Path, metavar="FILE", help="private key (default: ssh config, agent, ~/.ssh/id_*)")
    ssh.add_argument(
        "--known-hosts", type=Path, metavar="FILE",
        help="known_hosts checked strictly (default: ~/.ssh/known_hosts); keys are never added",
    )  # fmt: skip
    ssh.add_argument("--ssh-config", type=Path, metavar="FILE", help="ssh config file (default: ~/.ssh/config)")
    ssh.add_argument("--jump", metavar="[USER@]HOST[:PORT]", help="bastion the hosts are reached through")
    slurm = parser.add_argument_group("a Slurm partition (instead of Kubernetes)")
    slurm.add_argument("--slurm", action="store_true", help="draft a backend slurm profile from the controller")
    slurm.add_argument("--partition", metavar="P", help="the partition whose nodes are the agreement's node set")
    slurm.add_argument("--login", metavar="HOST", help="run Slurm's commands on this login node over SSH "
                       "(default: here)")  # fmt: skip
    slurm.add_argument("--account", metavar="A", help="sbatch --account for every job of the suite")
    slurm.add_argument("--run-dir", metavar="DIR", help="where the jobs' outputs go: a shared file system the "
                       "login node sees (default: /tmp/recovery-acceptance-slurm)")  # fmt: skip
    parser.set_defaults(func=_run)


def _hosts(text: str) -> dict[str, str]:
    """``--hosts``: a file of hosts or a comma-separated list → node name → address."""
    path = Path(text)
    if path.is_file():
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--hosts {path}: cannot read it: {exc}") from None
        where = [(f"{path}:{n}", line.split("#", 1)[0].strip()) for n, line in enumerate(lines, 1)]
    elif path.is_dir():
        raise UsageError(f"--hosts {path}: is a directory, expected a file of hosts or a comma-separated list")
    else:
        where = [(f"--hosts item {n}", item.strip()) for n, item in enumerate(text.split(","), 1)]
    out: dict[str, str] = {}
    for source, item in where:
        if not item:
            continue
        name, _, address = item.partition("=") if "=" in item else (item, "", item)
        name, address = name.strip(), address.strip()
        if not name or not address or any(c.isspace() for c in item):
            raise UsageError(f"{source}: {item!r}: expected NAME=ADDRESS[:PORT] or ADDRESS")
        if name in out:
            raise UsageError(f"{source}: {name!r} named twice")
        out[name] = address
    if not out:
        raise UsageError(f"--hosts {text!r}: no host named")
    return out


def _run(args: argparse.Namespace) -> int:
    from acceptance import clusters

    if not args.name or "/" in args.name or args.name.startswith("."):
        raise UsageError(f"{args.name!r} is not a cluster name (a folder name under {args.baselines_dir})")
    target = args.baselines_dir / args.name / PROFILE_FILE
    if target.exists():
        raise UsageError(f"{target} exists; acceptance init never overwrites a profile (move it away first)")
    slurm_only = [f"--{k.replace('_', '-')}" for k in ("partition", "login", "account", "run_dir") if getattr(args, k)]
    if slurm_only and not args.slurm:
        raise UsageError(f"{', '.join(slurm_only)}: for a Slurm profile; add --slurm")
    if args.slurm:
        if args.hosts is not None or args.context or args.kubeconfig or args.nodes:
            raise UsageError("--slurm drafts a Slurm profile: --hosts, --context, --kubeconfig and --nodes are for "
                             "other backends")  # fmt: skip
        if not args.partition:
            raise UsageError("--slurm needs --partition P: the partition whose nodes are the agreement's node set")
        from acceptance.clusters.slurm.draft import SlurmAccess

        access_slurm = SlurmAccess(args.partition, login=args.login, account=args.account, run_dir=args.run_dir)
        draft = clusters.draft_profile(args.name, "slurm", slurm=access_slurm)
    elif args.hosts is not None:
        if args.context or args.kubeconfig or args.nodes:
            raise UsageError("--hosts drafts an SSH profile: --context, --kubeconfig and --nodes are for Kubernetes")
        from acceptance.clusters.ssh.draft import HostAccess

        def absolute(path: Path | None) -> Path | None:
            return None if path is None else path.expanduser().resolve()

        access = HostAccess(
            _hosts(args.hosts), user=args.user, port=args.port, key=absolute(args.key),
            known_hosts=absolute(args.known_hosts), config=absolute(args.ssh_config), jump=args.jump,
        )  # fmt: skip
        draft = clusters.draft_profile(args.name, "ssh", hosts=access)
    else:
        draft = clusters.draft_profile(
            args.name, "kube", namespace=args.namespace, context=args.context, kubeconfig=args.kubeconfig,
            node_selector=args.nodes,
        )  # fmt: skip
    created = not target.parent.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(draft.text)
    except FileExistsError:
        raise UsageError(f"{target} appeared meanwhile; acceptance init never overwrites a profile") from None
    try:
        profile = load_profile_file(target)
    except ProfileError as exc:
        target.unlink()
        if created:
            target.parent.rmdir()
        raise UsageError(f"the draft did not pass the profile check, so it was not kept: {exc}") from None
    print(f"{target}: {len(profile.nodes)} nodes x {profile.gpus_per_node} GPUs; profile check passed")
    for note in draft.notes:
        print(f"  note: {note}")
    print(f"next: review it, then record the handover baseline: pytest acceptance/ --cluster={args.name} "
          f"--baselines-dir={args.baselines_dir} --record-baseline")  # fmt: skip
    return 0
