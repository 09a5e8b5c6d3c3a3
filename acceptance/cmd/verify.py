"""`acceptance verify FILE|DIR`: check a signed junit file or a whole report folder.

Exit 0 verified against a trust list, 1 verification failed (a changed file, a bad or
missing signature, a signer the allowed-signers file does not allow, a manifest entry
outside the folder), 2 unreadable input, 3 consistent but the signer UNTRUSTED (no
--allowed-signers: any key that re-signed the report would match its own signature).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from acceptance.errors import UsageError
from acceptance.report.verify import verify


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="check the SSHSIG signature of a report file, or a report or incident bundle folder (or .tar.gz)",
        description=(
            "Check FILE against FILE.sig, or a report folder: MANIFEST.json.sig, every sha256 in "
            "MANIFEST.json and the junit signature. Without --allowed-signers the signature is "
            "checked against the key embedded in it, the signer's fingerprint is printed as "
            "UNTRUSTED and the exit status is 3, never 0."
        ),
    )
    parser.add_argument("path", type=Path, metavar="FILE|DIR", help="a signed file or a report folder")
    parser.add_argument(
        "--allowed-signers",
        type=Path,
        metavar="FILE",
        help="OpenSSH allowed_signers file (see ssh-keygen(1) ALLOWED SIGNERS) listing trusted keys",
    )
    parser.add_argument("--identity", metavar="NAME", help="the principal expected to have signed")
    parser.add_argument(
        "--cluster",
        metavar="NAME",
        help="trust the allowed_signers of baselines/NAME/cluster.yaml (both parties' keys)",
    )
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    allowed = args.allowed_signers
    parties = None
    if args.cluster:
        from acceptance.profile import load_profile

        profile = load_profile(args.cluster, args.baselines_dir)
        parties = profile.parties  # names who signed what: the provider, the customer
        if allowed is None and profile.allowed_signers is None:
            raise UsageError(f"{profile.path} names no allowed_signers; pass --allowed-signers FILE")
        allowed = allowed or profile.allowed_signers
    result = verify(args.path, allowed, args.identity, parties)
    stream = sys.stdout if result.exit_status == 0 else sys.stderr
    for line in result.lines():
        print(line, file=stream)
    return result.exit_status
