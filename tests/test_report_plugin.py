"""Hook order: the report is finalized after pytest's junitxml plugin wrote its file.

The conftest below is the wiring recommended for `acceptance/plugin.py`; these tests
prove it on real pytest runs (in process, and under pytest-xdist).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas  # noqa: F401  imported here so that in-process pytester runs find numpy already loaded
import pytest
import xmlschema

import acceptance.report.finalize  # noqa: F401  same: matplotlib stays loaded across pytester runs
from acceptance.report.manifest import MANIFEST_NAME
from acceptance.report.sign import NAMESPACE
from acceptance.report.verify import verify
from tests.suite_process import runpytest

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="OpenSSH ssh-keygen is absent")

XSD = Path(__file__).parent / "data" / "junit.xsd"

WIRING = """
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance.report import reporting_plugin as reporting
from acceptance.report.junit import record_verdict
from acceptance.report.folder import ReportFolder
from acceptance.report.sign import SignOptions

PLUGIN_KEY = pytest.StashKey[reporting.ReportingPlugin]()


def pytest_addoption(parser):
    parser.addoption("--report-root")
    parser.addoption("--sign-key")
    parser.addoption("--no-sign", action="store_true")


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        return
    opt = config.option
    started = datetime.now(UTC)
    folder = ReportFolder.create(Path(opt.report_root), "sim", started)
    sign = SignOptions.from_options(no_sign=opt.no_sign, sign_key=opt.sign_key, environ=os.environ)
    provenance = {"cluster": "sim"}
    plugin = reporting.ReportingPlugin(config, folder, sign, provenance, simulated=True, started_utc=started)
    config.stash[PLUGIN_KEY] = plugin
    config.pluginmanager.register(plugin, "acceptance-reporting")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    reporting.on_makereport(item, report)
    return report


@pytest.fixture
def judge(request):
    def record(verdict):
        record_verdict(request.node, verdict)
        assert verdict.passed, verdict.message()
    return record


@pytest.fixture
def evidence(request):
    config = request.config
    if PLUGIN_KEY in config.stash:
        return config.stash[PLUGIN_KEY].folder
    return reporting.worker_report_folder(config)
"""

SUITE = """
import pandas as pd
import pytest
from acceptance.judge.verdict import Status, Verdict

SIZES = [1 << 20, 1 << 24, 1 << 28]


@pytest.mark.parametrize("node", ["gpu-01", "gpu-07"])
def test_fabric(judge, evidence, node):
    evidence.add_text(f"raw/nccl-{node}.txt", "# nccl-tests\\nAuthorization: Bearer abcdefghijklmnop\\n")
    now, base = [10.0, 100.0, 380.0], [10.0, 101.0, 381.0]
    table = pd.DataFrame({"size": SIZES, "busbw_now": now, "busbw_baseline": base})
    judge(Verdict(Status.PASS, f"all_reduce_perf {node}", "within 5% at every size",
                  {"margin": 0.05, "worst_size": 1 << 24, "ratio": 0.99, "unit": "GB/s"}, (), table))


def test_diagnostics(judge):
    judge(Verdict(Status.FAIL, "gpu-07", "GPU 3 fails pcie (XID 79) on gpu-07",
                  {"node": "gpu-07", "gpu": 3, "test": "pcie"}, ("pcie: GPU 3: fail",)))
"""


def _key(tmp_path: Path) -> Path:
    key = tmp_path / "signing_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci@example", "-f", str(key)], check=True)
    return key


def _allowed(tmp_path: Path, key: Path) -> Path:
    kind, blob = key.with_suffix(".pub").read_text().split()[:2]
    path = tmp_path / "allowed_signers"
    path.write_text(f"ci@example {kind} {blob}\n")
    return path


def _stock_verify(path: Path, allowed: Path) -> int:
    with path.open("rb") as data:
        argv = ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "ci@example", "-n", NAMESPACE, "-s"]
        return subprocess.run([*argv, f"{path}.sig"], stdin=data, capture_output=True, check=False).returncode


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    pytester.makeconftest(WIRING)
    pytester.makepyfile(test_fabric=SUITE)
    return pytester


def _only_folder(root: Path) -> Path:
    folders = [p for p in (root / "sim").iterdir() if p.is_dir()]
    assert len(folders) == 1, folders
    return folders[0]


def test_signature_covers_the_final_junit_bytes(suite: pytest.Pytester, tmp_path: Path):
    key = _key(tmp_path)
    junit = suite.path / "elsewhere" / "INC-1.xml"
    result = suite.runpytest(
        f"--junitxml={junit}",
        f"--report-root={suite.path / 'reports'}",
        f"--sign-key={key}",
        "-p",
        "no:recovery_acceptance",
    )
    assert result.ret == 1  # the failing diagnostics test decides, not the reporting
    result.stdout.fnmatch_lines(["*recovery acceptance report*", "*signed by key*", "*acceptance verify*"])
    raw = (_only_folder(suite.path / "reports") / "raw" / "nccl-gpu-01.txt").read_text()
    assert "abcdefghijklmnop" not in raw
    allowed = _allowed(tmp_path, key)
    folder = _only_folder(suite.path / "reports")
    # The junit as pytest left it, its copy in the folder, and the manifest all verify.
    assert _stock_verify(junit, allowed) == 0
    assert _stock_verify(folder / junit.name, allowed) == 0
    assert _stock_verify(folder / MANIFEST_NAME, allowed) == 0
    assert verify(folder, allowed).exit_status == 0
    # It is the final file: suite properties added at session end and verdict figures are in it.
    xml = junit.read_text()
    assert 'name="end_utc"' in xml
    assert 'name="worst_size" value="16777216"' in xml
    assert 'name="row.2" value="size=268435456 busbw_now=380 busbw_baseline=381"' in xml
    data = json.loads((folder / "report-data.json").read_text())
    outcomes = {t["nodeid"].split("::")[1]: t["outcome"] for t in data["tests"]}
    assert outcomes == {
        "test_fabric[gpu-01]": "passed",
        "test_fabric[gpu-07]": "passed",
        "test_diagnostics": "failed",
    }


def test_enriched_junit_validates_against_the_junit_schema(suite: pytest.Pytester, tmp_path: Path):
    junit = tmp_path / "junit.xml"
    suite.runpytest(
        f"--junitxml={junit}", f"--report-root={tmp_path / 'r'}", "--no-sign", "-p", "no:recovery_acceptance"
    )
    schema = xmlschema.XMLSchema(XSD)
    schema.validate(str(junit))
    # Everything but testcase-level properties also fits the strict junit-10 model.
    strict_text = XSD.read_text().replace(
        '<xs:element ref="properties" minOccurs="0"/>\n        <xs:choice', "<xs:choice"
    )
    assert strict_text != XSD.read_text()
    strict = xmlschema.XMLSchema(strict_text)
    assert not strict.is_valid(str(junit))  # proves the strict variant really is stricter
    import xml.etree.ElementTree as ET

    tree = ET.parse(junit)
    for case in tree.iter("testcase"):
        for props in case.findall("properties"):
            case.remove(props)
    strict.validate(tree)


def test_no_key_leaves_the_exit_status_alone(suite: pytest.Pytester, tmp_path: Path):
    suite.makepyfile(test_fabric=SUITE.replace("Status.FAIL", "Status.PASS"))
    junit = tmp_path / "junit.xml"
    result = suite.runpytest(f"--junitxml={junit}", f"--report-root={tmp_path / 'r'}", "-p", "no:recovery_acceptance")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*unsigned: no signing key*"])
    folder = _only_folder(tmp_path / "r")
    assert (folder / "report.html").is_file()
    assert (folder / MANIFEST_NAME).is_file()


@pytest.mark.slow
def test_xdist_gives_one_junit_one_signature_and_worker_verdicts(suite: pytest.Pytester, tmp_path: Path):
    key = _key(tmp_path)
    junit = tmp_path / "junit.xml"
    result = runpytest(
        suite,
        "-n",
        "2",
        f"--junitxml={junit}",
        f"--report-root={tmp_path / 'r'}",
        f"--sign-key={key}",
        "-p",
        "no:recovery_acceptance",
    )
    assert result.ret == 1
    folder = _only_folder(tmp_path / "r")
    assert sorted(p.name for p in folder.glob("*.sig")) == ["MANIFEST.json.sig", "junit.xml.sig"]
    assert sorted(p.name for p in tmp_path.glob("junit.xml*")) == ["junit.xml", "junit.xml.sig"]
    assert _stock_verify(junit, _allowed(tmp_path, key)) == 0
    data = json.loads((folder / "report-data.json").read_text())
    subjects = sorted(v["subject"] for t in data["tests"] for v in t["verdicts"])
    assert subjects == ["all_reduce_perf gpu-01", "all_reduce_perf gpu-07", "gpu-07"]
    assert "gw" not in json.dumps(data["provenance"])
    fabric = [v for t in data["tests"] for v in t["verdicts"] if v["subject"].startswith("all_reduce")]
    assert fabric[0]["table"]["columns"] == ["size", "busbw_now", "busbw_baseline"]
    assert 'name="worst_size"' in junit.read_text()
    assert (folder / "raw" / "nccl-gpu-07.txt").is_file()  # written by a worker into the controller's folder
    assert verify(folder).exit_status == 3, "consistent; the signer is not checked without a trust list"


def test_without_junitxml_pytest_writes_the_junit_into_the_report_folder(suite: pytest.Pytester, tmp_path: Path):
    key = _key(tmp_path)
    result = suite.runpytest("--report-root=reports", f"--sign-key={key}", "-p", "no:recovery_acceptance")
    assert result.ret == 1
    folder = _only_folder(suite.path / "reports")
    result.stdout.fnmatch_lines([f"*generated xml file: {folder / 'junit.xml'}*"])
    assert _stock_verify(folder / "junit.xml", _allowed(tmp_path, key)) == 0
    assert 'name="simulated" value="true"' in (folder / "junit.xml").read_text()
    assert verify(folder, _allowed(tmp_path, key)).exit_status == 0
