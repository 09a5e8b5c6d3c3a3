"""`acceptance profile check NAME`: validate a cluster profile and say what it agrees."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from acceptance.profile import load_profile
from acceptance.units import format_duration, format_size


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("profile", help="check a cluster profile (baselines/NAME/cluster.yaml)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="validate the profile; exit 0 valid, 2 invalid")
    check.add_argument("name", help="cluster name (folder under the baselines directory)")
    check.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    p = load_profile(args.name, args.baselines_dir)
    m = p.margins
    print(f"{p.path}: valid profile for cluster {p.name} (backend {p.backend})")
    print(f"  nodes: {len(p.nodes)} x {p.gpus_per_node} GPU ({p.nodes[0]} .. {p.nodes[-1]})")
    print(f"  DCGM: level {p.dcgm_level}, timeout {format_duration(p.dcgm_timeout_s)}")
    for test in p.nccl_tests:
        print(f"  nccl-tests {test.name}: {' '.join(test.args)}")
    print(
        f"  margins: busbw -{m.busbw_tolerance:.0%} at sizes >= {format_size(m.busbw_min_size)}, "
        f"step time +{m.step_time_tolerance:.0%}, probation {format_duration(m.probation_s)}"
    )
    return 0
