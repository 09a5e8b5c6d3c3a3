"""`acceptance countersign FILE|DIR --cluster NAME --sign-key KEY`: the other party signs a report or agreement.

FILE|DIR is a report folder (its MANIFEST.json, which lists every file, is countersigned), a rendered
agreement folder (agreement.md and agreement.html) or one signed file. It must verify first against the
profile's allowed_signers, the way `acceptance verify --cluster NAME` checks it; the key must be the
party's that has not signed yet. The customer's countersignature of a report is their acceptance.
A baseline is countersigned with `acceptance baseline countersign NAME`.
Exit 0 countersigned; 2 refused (the message says why; nothing was written).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from acceptance.errors import UsageError
from acceptance.report.manifest import MANIFEST_NAME
from acceptance.report.verify import AGREEMENT_NAMES, verify


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "countersign",
        help="the other party signs a verified report folder or rendered agreement (<file>.<party>.sig)",
        description=(
            "Countersign a report folder (its MANIFEST.json), a rendered agreement folder (agreement.md and "
            "agreement.html) or one signed file, as the party of the profile's parties: whose key --sign-key "
            "is. It must verify first; the customer's countersignature of a report is their acceptance."
        ),
    )
    parser.add_argument("path", type=Path, metavar="FILE|DIR", help="a report folder, agreement folder or file")
    parser.add_argument("--cluster", metavar="NAME", required=True, help="whose parties and allowed_signers")
    parser.add_argument("--sign-key", type=Path, metavar="KEY", help="the countersigning party's key (default: agent)")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.set_defaults(func=_run)


def targets(path: Path) -> list[Path]:
    """The files whose countersignature stands for `path`'s."""
    if path.is_dir() and (path / MANIFEST_NAME).is_file():
        return [path / MANIFEST_NAME]
    if path.is_dir():
        found = [path / name for name in AGREEMENT_NAMES if (path / name).is_file()]
        if found:
            return found
        raise UsageError(f"{path}: neither a report folder ({MANIFEST_NAME}) nor a rendered agreement (agreement.md)")
    if not path.is_file():
        raise UsageError(f"{path}: no such file or folder")
    return [path]


def _run(args: argparse.Namespace) -> int:
    from acceptance.profile import load_profile
    from acceptance.report.countersign import countersign
    from acceptance.report.sign import SignOptions

    profile = load_profile(args.cluster, args.baselines_dir)
    if profile.allowed_signers is None:
        raise UsageError(f"{profile.path} names no allowed_signers (both parties' public keys)")
    files = targets(args.path)
    checked = verify(args.path, profile.allowed_signers, parties=profile.parties)
    if checked.exit_status != 0:
        why = "; ".join(line for line in checked.lines() if not line.startswith("OK"))
        raise UsageError(f"{args.path} does not verify, not countersigned: {why}")
    sign = SignOptions.from_options(no_sign=False, sign_key=args.sign_key, environ=os.environ)
    written = []
    for file in files:
        try:
            written.append(countersign(file, sign, profile.allowed_signers, profile.parties))
        except UsageError:
            for done in written:  # all of it or none of it
                done.signature.unlink(missing_ok=True)
            raise
    for done in written:
        print(done.line())
    after = verify(args.path, profile.allowed_signers, parties=profile.parties)
    for line in after.lines():
        print(line)
    return 0 if after.exit_status == 0 else 1
