"""Both parties sign: a baseline, a report and the rendered agreement carry the provider's and the customer's
signatures (``<file>.sig`` and ``<file>.customer.sig``), each a stock ``ssh-keygen -Y sign`` signature."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from acceptance.baseline import BaselineStore
from acceptance.baseline_trust import require_agreement, trust
from acceptance.cli import main
from acceptance.errors import BaselineError, ProfileError
from acceptance.profile import load_profile_file
from acceptance.report.manifest import build_manifest, write_manifest
from acceptance.report.parties import Parties, Signature, agreement_line, check_attribution, signed_line
from acceptance.report.sign import SignOptions, sign_files
from tests.suite_run import CUSTOMER_KEY, ROOT, demo_key, run_suite, sim_cluster_folder

PROVIDER = "sim-demo@recovery-acceptance"
CUSTOMER = "sim-customer-demo@recovery-acceptance"


def customer_key(folder: Path) -> Path:
    key = folder / "sim-customer-demo-key"
    shutil.copy(CUSTOMER_KEY, key)
    key.chmod(0o600)
    return key


def stranger_key(folder: Path, comment: str = "stranger@nowhere") -> Path:
    key = folder / comment.split("@", maxsplit=1)[0]
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)], check=True)
    return key


def stock_verify(allowed: Path, principal: str, file: Path, sig: Path) -> subprocess.CompletedProcess[bytes]:
    with file.open("rb") as data:
        return subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", principal, "-n", "recovery-acceptance",
             "-s", str(sig)],
            stdin=data, capture_output=True, check=False,
        )  # fmt: skip


def provider_only(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the shipped sim agreement whose baseline only the provider signed: (folder, baseline)."""
    folder = sim_cluster_folder(tmp_path)
    baseline = BaselineStore(folder).latest().path
    Path(f"{baseline}.customer.sig").unlink()
    return folder, baseline


def _trust(folder: Path) -> str:
    profile = load_profile_file(folder / "cluster.yaml")
    return trust(BaselineStore(folder).latest(), profile, allow_unsigned=False).agreement


# --- the shipped simulated agreement -------------------------------------------------------------------------


@pytest.mark.parametrize("cluster", ["sim", "sim-ssh"])
def test_the_shipped_simulated_baseline_is_signed_by_both_and_stock_openssh_checks_each(cluster: str) -> None:
    folder = ROOT / "baselines" / cluster
    assert _trust(folder) == "provider and customer signed"
    baseline = BaselineStore(folder).latest().path
    allowed = folder / "allowed_signers"
    for principal, sig in ((PROVIDER, f"{baseline}.sig"), (CUSTOMER, f"{baseline}.customer.sig")):
        done = stock_verify(allowed, principal, baseline, Path(sig))
        assert done.returncode == 0, done.stderr
        assert stock_verify(allowed, CUSTOMER if principal == PROVIDER else PROVIDER, baseline, Path(sig)).returncode


# --- baseline countersign ------------------------------------------------------------------------------------


def test_the_customer_countersigns_a_provider_signed_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, baseline = provider_only(tmp_path)
    assert _trust(folder) == "provider-signed only"
    key = customer_key(tmp_path)
    assert main(["baseline", "countersign", "sim", "--baselines-dir", str(folder.parent), "--sign-key", str(key)]) == 0
    out = capsys.readouterr().out
    assert f"countersigned by the customer ({CUSTOMER}), {baseline.name}.customer.sig" in out
    assert "agreement: provider and customer signed" in out
    assert _trust(folder) == "provider and customer signed"
    sig = Path(f"{baseline}.customer.sig")
    assert stock_verify(folder / "allowed_signers", CUSTOMER, baseline, sig).returncode == 0
    assert main(["baseline", "verify", "sim", "--baselines-dir", str(folder.parent)]) == 0
    assert "agreement: provider and customer signed" in capsys.readouterr().out


def test_countersign_refuses_a_baseline_that_does_not_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tampered baseline must never gain the customer's signature."""
    folder, baseline = provider_only(tmp_path)
    data = json.loads(baseline.read_text())
    for row in data["results"]["nccl"]["all_reduce_perf"]["rows"]:
        row["oop"]["busbw"] = round(row["oop"]["busbw"] / 2, 2)
    baseline.write_text(json.dumps(data, indent=1))
    key = customer_key(tmp_path)
    assert main(["baseline", "countersign", "sim", "--baselines-dir", str(folder.parent), "--sign-key", str(key)]) == 2
    err = capsys.readouterr().err
    assert f"{baseline.name} does not verify, not countersigned" in err
    assert "content does not match the signature" in err
    assert not Path(f"{baseline}.customer.sig").exists()


def test_countersign_refuses_a_key_that_is_not_the_other_partys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, baseline = provider_only(tmp_path)
    argv = ["baseline", "countersign", "sim", "--baselines-dir", str(folder.parent), "--sign-key"]
    assert main([*argv, str(demo_key(tmp_path))]) == 2  # the provider signing its own baseline twice
    err = capsys.readouterr().err
    assert "the provider already signed it" in err
    assert f"the countersignature is the customer's: sign with a key of the customer ({CUSTOMER})" in err
    outsider = stranger_key(tmp_path)  # allowed_signers lists it, neither party does
    with (folder / "allowed_signers").open("a") as handle:
        handle.write(f"stranger@nowhere {' '.join(outsider.with_suffix('.pub').read_text().split()[:2])}\n")
    assert main([*argv, str(outsider)]) == 2
    assert "is a key of neither party" in capsys.readouterr().err
    unlisted = stranger_key(tmp_path, "unlisted@nowhere")
    assert main([*argv, str(unlisted)]) == 2
    assert "was not countersigned" in capsys.readouterr().err
    assert not Path(f"{baseline}.customer.sig").exists()
    assert not list(folder.glob("*.provider.sig"))
    assert _trust(folder) == "provider-signed only"


def test_countersign_refuses_the_shipped_read_only_agreement(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = ROOT / "acceptance" / "sim" / "agreements"
    assert main(["baseline", "countersign", "sim", "--baselines-dir", str(shipped), "--sign-key", "x"]) == 2
    assert "read-only" in capsys.readouterr().err


def test_a_countersignature_file_made_with_the_wrong_partys_key_is_refused(tmp_path: Path) -> None:
    """Attribution is by the key that made the signature, never by the file's name."""
    folder, baseline = provider_only(tmp_path)
    shutil.copy(f"{baseline}.sig", f"{baseline}.customer.sig")  # the provider's signature, renamed
    with pytest.raises(BaselineError, match="named for the customer but was made with the provider's key"):
        _trust(folder)


def test_a_stale_countersignature_is_refused(tmp_path: Path) -> None:
    """The provider re-signed a changed baseline; the customer's signature is of the old content."""
    folder = sim_cluster_folder(tmp_path)
    baseline = BaselineStore(folder).latest().path
    baseline.write_text(baseline.read_text().replace('"harness_version"', '"harness_version" ', 1))
    Path(f"{baseline}.sig").unlink()
    sign_files([baseline], SignOptions(key=demo_key(tmp_path)))
    with pytest.raises(BaselineError, match=r"\.customer\.sig\): content does not match"):
        _trust(folder)


# --- agreement.require: both ---------------------------------------------------------------------------------


def _require_both(folder: Path) -> None:
    profile = folder / "cluster.yaml"
    profile.write_text(profile.read_text() + "\nagreement:\n  require: both\n")


def test_require_both_refuses_a_one_party_baseline_naming_the_countersign_command(tmp_path: Path) -> None:
    folder, baseline = provider_only(tmp_path)
    _require_both(folder)
    profile = load_profile_file(folder / "cluster.yaml")
    loaded = BaselineStore(folder).latest()
    found = trust(loaded, profile, allow_unsigned=False)
    with pytest.raises(BaselineError) as refused:
        require_agreement(found, profile, loaded)
    said = str(refused.value)
    assert "requires both parties' signatures (agreement.require: both)" in said
    assert "the baseline is provider-signed only: nothing was started" in said
    assert "The customer countersign it with `acceptance baseline countersign sim --sign-key KEY`" in said
    Path(f"{baseline}.sig").unlink()  # unsigned, even allowed for a lab, is not both-signed
    lab = trust(loaded, profile, allow_unsigned=True)
    with pytest.raises(BaselineError, match="the baseline is signed by neither party"):
        require_agreement(lab, profile, loaded)


def test_require_both_passes_a_both_signed_baseline(tmp_path: Path) -> None:
    folder = sim_cluster_folder(tmp_path)
    _require_both(folder)
    profile = load_profile_file(folder / "cluster.yaml")
    loaded = BaselineStore(folder).latest()
    require_agreement(trust(loaded, profile, allow_unsigned=False), profile, loaded)


@pytest.mark.heavy
def test_require_both_stops_the_run_before_anything_starts(pytester: pytest.Pytester) -> None:
    folder, _ = provider_only(pytester.path)
    _require_both(folder)
    run = run_suite(pytester, "-k", "cluster_answers")
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    err = run.result.stderr.str()
    assert "(agreement.require: both) and the baseline is provider-signed only: nothing was started" in err
    assert not run.junit.exists()
    assert not run.report_dir.exists()


def test_require_both_needs_parties_and_a_key_is_one_partys(tmp_path: Path) -> None:
    folder = sim_cluster_folder(tmp_path)
    profile = folder / "cluster.yaml"
    text = profile.read_text()
    start = text.index("parties:")
    without = text[:start] + text[text.index("\n\n", start) :]
    profile.write_text(without + "\nagreement:\n  require: both\n")
    with pytest.raises(ProfileError, match="'both' without a parties: section"):
        load_profile_file(profile)
    profile.write_text(text.replace(f"customer: [{CUSTOMER}]", f"customer: [{PROVIDER}]"))
    twice = r"parties\.customer\[0\]: found 'sim-demo@recovery-acceptance', expected a key of one party only"
    with pytest.raises(ProfileError, match=twice + r" \(the provider lists it too\)"):
        load_profile_file(profile)
    profile.write_text(text + "\nagreement:\n  require: all\n")
    with pytest.raises(ProfileError, match="require"):
        load_profile_file(profile)


# --- the lines a run prints ----------------------------------------------------------------------------------


def _signature(party: str | None, name: str = "f.sig") -> Signature:
    return Signature(Path(name), party, "who@x", "SHA256:x")


def test_the_agreement_line_says_which_parties_signed() -> None:
    assert signed_line(["provider", "customer"]) == "provider and customer signed"
    assert signed_line(["customer", "provider"]) == "provider and customer signed"
    assert signed_line(["provider"]) == "provider-signed only"
    assert signed_line(["customer"]) == "customer-signed only"
    assert signed_line([]) == "signed by neither party"
    assert agreement_line([_signature("provider"), _signature(None, "f.sig")]).startswith(
        "provider-signed only (who@x signed too, a key of neither party"
    )
    assert check_attribution([_signature("provider"), _signature("provider", "f.customer.sig")]) == [
        "f.customer.sig is named for the customer but was made with the provider's key (SHA256:x)",
        "the provider signed twice",
    ]


def test_a_party_key_is_matched_as_a_principal_or_as_a_public_key() -> None:
    blob = b"\x00\x00\x00\x0bssh-ed25519key"
    import base64

    parties = Parties({"provider": ("ops@p",), "customer": (f"ssh-ed25519 {base64.b64encode(blob).decode()} c",)})
    assert parties.party_of("ops@p", b"other") == "provider"
    assert parties.party_of("someone", blob) == "customer"
    assert parties.party_of("someone", b"other") is None


@pytest.mark.slow
def test_a_run_against_a_provider_signed_baseline_says_so_in_header_junit_and_html(pytester: pytest.Pytester) -> None:
    provider_only(pytester.path)
    run = run_suite(pytester, "-k", "cluster_answers")
    assert run.result.ret == 0, run.result.stdout.str()[-2000:]
    run.result.stdout.fnmatch_lines(["agreement: provider-signed only"])
    assert run.suite_properties()["agreement"] == "provider-signed only"
    (html,) = run.report_dir.rglob("report.html")
    assert "<tr><th>agreement</th><td>provider-signed only</td></tr>" in html.read_text()


# --- the report and the rendered agreement -------------------------------------------------------------------


def report_folder(base: Path, key: Path) -> Path:
    """A small report folder: files, MANIFEST.json and its signature by `key` (as finalize makes it)."""
    folder = base / "report"
    folder.mkdir()
    (folder / "junit.xml").write_text("<testsuites/>\n")
    (folder / "report.html").write_text("<html>PASS</html>\n")
    manifest = build_manifest(folder, created_utc="2026-12-02T00:00:00+00:00", signing={}, provenance={})
    path = write_manifest(folder, manifest)
    assert sign_files([path], SignOptions(key=key)).signed
    return folder


def test_the_customer_countersigns_the_report_and_verify_names_who_signed_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = sim_cluster_folder(tmp_path)
    report = report_folder(tmp_path, demo_key(tmp_path))
    base = ["--cluster", "sim", "--baselines-dir", str(folder.parent)]
    assert main(["verify", str(report), *base]) == 0
    assert f"signed by provider ({PROVIDER}, MANIFEST.json.sig): provider-signed only" in capsys.readouterr().out
    assert main(["countersign", str(report), *base, "--sign-key", str(customer_key(tmp_path))]) == 0
    capsys.readouterr()
    assert main(["verify", str(report), *base]) == 0
    out = capsys.readouterr().out
    assert (
        f"MANIFEST.json: signed by provider ({PROVIDER}, MANIFEST.json.sig) and customer ({CUSTOMER}, "
        "MANIFEST.json.customer.sig): provider and customer signed"
    ) in out
    assert "not listed in MANIFEST.json" not in out
    manifest = report / "MANIFEST.json"
    sig = report / "MANIFEST.json.customer.sig"
    assert stock_verify(folder / "allowed_signers", CUSTOMER, manifest, sig).returncode == 0
    assert main(["verify", str(sig), *base]) == 0  # the countersignature's path names its file
    capsys.readouterr()
    (report / "report.html").write_text("<html>FAIL</html>\n")  # the accepted report, changed afterwards
    assert main(["verify", str(report), *base]) == 1


def test_a_changed_report_is_not_countersigned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = sim_cluster_folder(tmp_path)
    report = report_folder(tmp_path, demo_key(tmp_path))
    (report / "report.html").write_text("<html>FAIL</html>\n")
    argv = ["countersign", str(report), "--cluster", "sim", "--baselines-dir", str(folder.parent), "--sign-key"]
    assert main([*argv, str(customer_key(tmp_path))]) == 2
    assert "does not verify, not countersigned" in capsys.readouterr().err
    assert not (report / "MANIFEST.json.customer.sig").exists()


def test_the_rendered_agreement_is_signed_by_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = sim_cluster_folder(tmp_path)
    out = tmp_path / "agreement"
    base = ["--baselines-dir", str(folder.parent)]
    assert main(["agreement", "sim", *base, "--out", str(out), "--sign-key", str(demo_key(tmp_path))]) == 0
    assert f"signed by the provider ({PROVIDER}); the customer countersigns with" in capsys.readouterr().out
    assert main(["countersign", str(out), "--cluster", "sim", *base, "--sign-key", str(customer_key(tmp_path))]) == 0
    capsys.readouterr()
    assert main(["verify", str(out), "--cluster", "sim", *base]) == 0
    said = capsys.readouterr().out
    for name in ("agreement.md", "agreement.html"):
        assert f"{name}: signed by provider ({PROVIDER}, {name}.sig) and customer ({CUSTOMER}" in said
        for principal, sig in ((PROVIDER, f"{name}.sig"), (CUSTOMER, f"{name}.customer.sig")):
            assert stock_verify(folder / "allowed_signers", principal, out / name, out / sig).returncode == 0
    # rendered again: the earlier signatures are of another text, so they are removed, never left stale
    assert main(["agreement", "sim", *base, "--out", str(out)]) == 0
    assert not list(out.glob("*.sig"))


def test_the_agreement_is_not_signed_with_a_key_of_neither_party(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = sim_cluster_folder(tmp_path)
    out = tmp_path / "agreement"
    argv = ["agreement", "sim", "--baselines-dir", str(folder.parent), "--out", str(out), "--sign-key"]
    assert main([*argv, str(stranger_key(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "agreement.md was not signed" in err
    assert "is not in" in err  # allowed_signers does not list it
    assert not list(out.glob("*.sig"))


def test_a_countersignature_that_is_no_signature_is_a_clear_refusal(tmp_path: Path) -> None:
    folder = sim_cluster_folder(tmp_path)
    baseline = BaselineStore(folder).latest().path
    Path(f"{baseline}.customer.sig").write_text("not a signature\n")
    with pytest.raises(
        BaselineError,
        match=r"a signature cannot be read .*customer\.sig:1: expected -----BEGIN SSH SIGNATURE-----, found 'not a",
    ):
        _trust(folder)
