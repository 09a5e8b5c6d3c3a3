"""`acceptance agreement NAME`: the agreement as a document, and the provider's Prometheus alerting rules.

    acceptance agreement prod-h200 --out reports/prod-h200/agreement   # agreement.md + agreement.html
    acceptance agreement prod-h200                                      # the Markdown on stdout
    acceptance agreement prod-h200 --alert-rules deploy/prometheus/recovery-acceptance.rules.yaml
    promtool check rules deploy/prometheus/recovery-acceptance.rules.yaml

The rules are made from ``baselines/NAME/cluster.yaml`` (criterion 5's ``recurrence:`` rules, the
``severity:`` levels and their respond clocks, ``coverage:``, ``prometheus:`` node label and selector,
``recurrence.job`` series) and the latest baseline (the job's own step-time reference). What the
agreement does not state is listed at the top of the file, never invented. Exit 2 for a bad profile.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from acceptance import clusters
from acceptance.agreement import document
from acceptance.agreement.alerts import AlertInputs, alert_rules
from acceptance.agreement.document import AgreementInputs
from acceptance.baseline import BaselineStore, LoadedBaseline
from acceptance.baseline_trust import trust
from acceptance.errors import AcceptanceError, UsageError
from acceptance.incident.severity import SeverityPolicy
from acceptance.judge.recurrence_rules import rules_from_profile
from acceptance.profile import Profile, load_profile
from acceptance.report.parties import other, signature_files


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agreement", help="the agreement as Markdown and HTML, and the provider's Prometheus alerting rules"
    )
    parser.add_argument("name", help="cluster name (folder under the baselines directory)")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.add_argument(
        "--alert-rules",
        type=Path,
        metavar="FILE",
        help="write Prometheus alerting rules that implement the agreement's definitions ('-': stdout)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="write the agreement as agreement.md and agreement.html into DIR"
    )
    parser.add_argument(
        "--sign-key", type=Path, metavar="KEY",
        help="with --out: sign agreement.md and agreement.html with this party's key (the other party "
        "countersigns with `acceptance countersign DIR --cluster NAME`)",
    )  # fmt: skip
    parser.set_defaults(func=_run)


def inputs(profile: Profile, baseline: LoadedBaseline | None) -> AlertInputs:
    """The alert rules' inputs from the profile and its latest baseline (None: there is none)."""
    from acceptance.criteria.recurrence import baseline_step_time

    rules = rules_from_profile(profile.recurrence, profile.severity.get("degraded_rule"))
    policy = SeverityPolicy.from_profile(profile.severity, profile.coverage)
    job = dict(profile.recurrence.get("job") or {})
    notes = []
    simulated_job = clusters.simulated_job_series(profile)
    if simulated_job and not (profile.prometheus or profile.recurrence.get("offline_dumps")):
        job = {**simulated_job, **job}
        notes.append("SIMULATED cluster: the job's series are the simulator's production period")
    results = dict(baseline.baseline.data["results"]) if baseline is not None else None
    prom = profile.prometheus
    return AlertInputs(
        cluster=profile.name,
        rules=rules,
        policy=policy,
        nodes=profile.nodes,
        node_label=str(prom.get("node_label", "Hostname")),
        selector=str(prom.get("selector", "")),
        step_time=job.get("step_time"),
        progress=job.get("progress"),
        baseline_step_s=baseline_step_time(results),
        notes=tuple(notes),
    )


def document_inputs(profile: Profile, baseline: LoadedBaseline | None, signatures: str = "") -> AgreementInputs:
    """What the document is made of; `signatures`: who signed the baseline (the trust gate's words)."""
    return AgreementInputs(
        cluster=profile.name,
        profile_path=str(profile.path),
        backend=clusters.backend_of(profile).title,
        nodes=profile.nodes,
        gpus_per_node=profile.gpus_per_node,
        provider=profile.provider,
        agreement=profile.agreement,
        policy=SeverityPolicy.from_profile(profile.severity, profile.coverage),
        rules=rules_from_profile(profile.recurrence, profile.severity.get("degraded_rule")),
        baseline=baseline.baseline.data if baseline is not None else None,
        baseline_name=baseline.path.name if baseline is not None else None,
        baseline_sha256=baseline.sha256 if baseline is not None else None,
        simulated=clusters.backend_of(profile).simulated,
        coverage_stated=profile.coverage_stated,
        parties=dict(profile.parties.keys),
        baseline_signatures=signatures,
    )


def _run(args: argparse.Namespace) -> int:
    profile = load_profile(args.name, args.baselines_dir)
    baseline: LoadedBaseline | None
    signatures = ""
    try:  # only a baseline the trust gate accepts (this cluster's, signed, its chain whole) frames the agreement
        baseline = BaselineStore(profile.path.parent).latest()
        found = trust(baseline, profile, allow_unsigned=False)
        signatures = found.agreement or found.line
    except AcceptanceError as exc:
        print(f"acceptance agreement: {exc}; what needs the baseline is 'to agree'", file=sys.stderr)
        baseline = None
    if args.sign_key is not None and args.out is None:
        raise UsageError("--sign-key signs the rendered agreement: give --out DIR too")
    if args.alert_rules is not None:
        _alert_rules(args.alert_rules, profile, baseline)
    if args.out is not None or args.alert_rules is None:
        doc = document_inputs(profile, baseline, signatures)
        if args.out is None:
            sys.stdout.write(document.markdown(doc))
            return 0
        args.out.mkdir(parents=True, exist_ok=True)
        written = [args.out / "agreement.md", args.out / "agreement.html"]
        for path in written:  # a signature of an earlier rendering is no signature of this one
            for sig in signature_files(path):
                sig.unlink()
        written[0].write_text(document.markdown(doc), encoding="utf-8")
        written[1].write_text(document.html_page(doc), encoding="utf-8")
        open_items = document.to_agree(doc)
        print(f"agreement: {args.out / 'agreement.md'}, {args.out / 'agreement.html'}")
        if args.sign_key is not None:
            print(_sign(written, args.sign_key, profile))
        print(f"to agree: {len(open_items)} item(s)" + (": " + "; ".join(open_items) if open_items else ""))
    return 0


def _sign(files: list[Path], key: Path, profile: Profile) -> str:
    """Sign the rendered agreement with one party's key (the other countersigns); UsageError when it is none."""
    import os

    from acceptance.report.countersign import key_party
    from acceptance.report.sign import SignOptions, sign_files

    if profile.allowed_signers is None or not profile.parties.named:
        raise UsageError(
            f"{profile.path}: to sign the agreement the profile names allowed_signers and "
            "parties: {provider: [keys], customer: [keys]}"
        )
    options = SignOptions.from_options(no_sign=False, sign_key=key, environ=os.environ)
    sample, made = key_party(files[0], options, profile.allowed_signers, profile.parties, "signed")
    shutil.rmtree(sample.parent, ignore_errors=True)
    outcome = sign_files(files, options)
    if not outcome.signed:
        for sig in outcome.signatures:
            sig.unlink(missing_ok=True)
        raise UsageError(f"the agreement was not signed: {outcome.describe()}")
    return (
        f"signed by the {made.party} ({made.principal or made.fingerprint}); the {other(made.party or '')} "
        f"countersigns with `acceptance countersign {files[0].parent} --cluster {profile.name} --sign-key KEY`"
    )


def _alert_rules(target: Path, profile: Profile, baseline: LoadedBaseline | None) -> None:
    made = inputs(profile, baseline)
    header = [
        f"Prometheus alerting rules of the agreement for cluster {profile.name}, made by `acceptance agreement`",
        f"from {profile.path}" + (f" and baseline {baseline.path.name} (sha256 {baseline.sha256})" if baseline else ""),
        "the same rules and thresholds criterion 5 judges with; clocks in " + made.policy.coverage.describe(),
    ]
    text = alert_rules(made, header)
    if str(target) == "-":
        sys.stdout.write(text)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"alert rules: {target} ({text.count('- alert:')} rules)")
