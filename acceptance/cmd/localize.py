"""`acceptance localize --cluster NAME [--nodes NODE ...] [--test NAME]`: name the bad node on its own.

Runs the localization the suite runs when a fabric item fails, without the rest of the suite:
rounds of nccl-tests on disjoint groups of nodes, judged against the latest baseline's pair
baseline, until one cause is confirmed. It prints the conclusion and one line per round (or the
whole result with ``--json``), deletes every cluster object it made, and exits 0 when there is
no culprit, 1 when it named one, 3 when it could not single one out.

    acceptance localize --cluster prod-h200
    acceptance localize --cluster sim --sim-fault nic-degraded@sim-node-07
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acceptance import clusters
from acceptance.baseline import BaselineStore
from acceptance.baseline_trust import trust
from acceptance.criteria.context import RunContext
from acceptance.criteria.localize_result import LocalizeResult
from acceptance.criteria.run import Criteria
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import UsageError
from acceptance.profile import load_profile


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("localize", help="find the bad node, link or switch of a cluster's fabric")
    parser.add_argument("--cluster", required=True, metavar="NAME", help="profile name (baselines/NAME/cluster.yaml)")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.add_argument("--nodes", nargs="+", metavar="NODE", help="search these nodes only (default: all)")
    parser.add_argument("--test", metavar="NAME", help="the nccl test to use (default: the baseline's first)")
    parser.add_argument("--sim-fault", action="append", default=[], metavar="SPEC", help="simulated clusters only")
    parser.add_argument(
        "--allow-unsigned-baseline", action="store_true", help="judge with an unsigned baseline (labs only)"
    )
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from acceptance.run_session import new_run_id

    profile = load_profile(args.cluster, args.baselines_dir)
    if args.nodes:
        profile.check_returned_nodes(args.nodes, "--nodes")
    store = BaselineStore(profile.path.parent)
    baseline = None  # without a baseline: the profile's commands, judged against each round's median
    if store.files():  # a baseline that is there is used only once trusted, as a run would use it
        baseline = store.latest()
        trust(baseline, profile, allow_unsigned=args.allow_unsigned_baseline)
    started = datetime.now(UTC)
    context = RunContext.create(profile, baseline, returned_nodes=(), run_id=new_run_id(started), started=started)
    tests = context.nccl_tests
    test = args.test or tests[0]
    if test not in tests:
        where = "the baseline" if baseline else profile.path
        raise UsageError(f"--test {test}: not a test of {where} ({', '.join(tests)})")
    cluster = clusters.open(profile, context.run_id, faults=clusters.parse_faults(args.sim_fault))
    folder = SharedFolder(Path(tempfile.mkdtemp(prefix="acceptance-localize-")))
    try:
        run = Criteria(context, cluster, folder, None, selected=frozenset())
        result = run.localize.search(test, nodes=args.nodes, triggered=False)
    finally:
        try:
            cluster.cleanup()
        finally:
            cluster.close()
            shutil.rmtree(folder.path, ignore_errors=True)
    _print(result, as_json=args.json)
    if not result.conclusion.confirmed:
        return 3
    return 1 if result.conclusion.culprits else 0


def _print(result: LocalizeResult, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
        return
    c = result.conclusion
    print(f"culprit: {c.culprit} ({c.culprit_kind}); {c.rounds} round(s), {c.tests} group test(s), "
          f"{result.seconds:.1f} s")  # fmt: skip
    for line in result.evidence():
        print(f"  {line}")
