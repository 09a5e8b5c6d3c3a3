"""Sign report files with SSHSIG through stock OpenSSH (`ssh-keygen -Y sign`).

The key comes from `--sign-key` (a private key file, or a public key whose private
half the ssh-agent holds) or, without it, from the first key of the running
ssh-agent, so hardware-backed keys work. Signing never raises for a foreseeable
problem: the outcome says what was signed and, when nothing was, why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

NAMESPACE = "recovery-acceptance"
SIG_SUFFIX = ".sig"


@dataclass(frozen=True)
class SignOptions:
    """How to sign: from `--no-sign`, `--sign-key` and the environment's `SSH_AUTH_SOCK`."""

    enabled: bool = True
    key: Path | None = None
    agent_socket: str | None = None
    ssh_keygen: str = "ssh-keygen"
    timeout_s: float = 120.0

    @classmethod
    def from_options(cls, *, no_sign: bool, sign_key: str | Path | None, environ: Mapping[str, str]) -> SignOptions:
        return cls(
            enabled=not no_sign,
            key=Path(sign_key).expanduser() if sign_key else None,
            agent_socket=environ.get("SSH_AUTH_SOCK") or None,
        )


@dataclass(frozen=True)
class SignOutcome:
    """What signing did: the signature files written, the signer, or why nothing was signed."""

    signatures: tuple[Path, ...] = ()
    fingerprint: str | None = None
    signer: str | None = None
    problem: str | None = None
    disabled: bool = False

    @property
    def signed(self) -> bool:
        return bool(self.signatures) and self.problem is None

    def describe(self) -> str:
        if self.disabled:
            return "unsigned: signing was turned off with --no-sign"
        if self.problem:
            return f"unsigned: {self.problem}"
        return f"signed by {self.signer} ({self.fingerprint}), namespace {NAMESPACE}"


@dataclass(frozen=True)
class _Signer:
    key_arg: Path
    fingerprint: str
    description: str


def signature_path(path: Path) -> Path:
    return path.with_name(path.name + SIG_SUFFIX)


def _env(options: SignOptions) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    if options.agent_socket:
        env["SSH_AUTH_SOCK"] = options.agent_socket
    return env


def _run(argv: Sequence[str], options: SignOptions) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # no controlling terminal: a passphrase is never prompted for, it fails
        env=_env(options),
        timeout=options.timeout_s,
        check=False,
    )


def _fingerprint(key: Path, options: SignOptions) -> str | None:
    done = _run([options.ssh_keygen, "-l", "-E", "sha256", "-f", str(key)], options)
    fields = done.stdout.split()
    return fields[1] if done.returncode == 0 and len(fields) > 1 else None


def _resolve(options: SignOptions, scratch: Path) -> _Signer | str:
    """The key to pass to `ssh-keygen -f`, or the reason there is none."""
    if shutil.which(options.ssh_keygen) is None:
        return f"{options.ssh_keygen} not found (install OpenSSH's client: apt-get install openssh-client)"
    if options.key is not None:
        if options.key.is_dir():
            return f"signing key {options.key} is a directory, not a key file"
        if not options.key.is_file():
            return f"signing key {options.key} does not exist"
        fingerprint = _fingerprint(options.key, options)
        if fingerprint is None:
            return f"{options.key} is not an SSH key that ssh-keygen can read"
        if options.key.suffix == ".pub" and not options.agent_socket:
            return (
                f"{options.key} is a public key: its private key must be in a running ssh-agent"
                " (SSH_AUTH_SOCK is not set)"
            )
        return _Signer(options.key, fingerprint, f"key {options.key}")
    if not options.agent_socket:
        return "no signing key: pass --sign-key PATH, or start an ssh-agent holding a key (SSH_AUTH_SOCK is not set)"
    listed = _run(["ssh-add", "-L"], options) if shutil.which("ssh-add") else None
    if listed is None:
        return "ssh-add not found, cannot ask the ssh-agent for its keys (install openssh-client)"
    lines = [line for line in listed.stdout.splitlines() if line.strip()]
    if listed.returncode != 0 or not lines:
        why = (listed.stdout + listed.stderr).strip() or f"exit status {listed.returncode}"
        return f"the ssh-agent at {options.agent_socket} offers no key ({why}); pass --sign-key PATH"
    public = scratch / "agent-key.pub"
    public.write_text(lines[0] + "\n", encoding="utf-8")
    fingerprint = _fingerprint(public, options) or "unknown fingerprint"
    comment = " ".join(lines[0].split()[2:]) or lines[0].split()[0]
    return _Signer(public, fingerprint, f"ssh-agent key {comment}")


def check_signing(options: SignOptions) -> str | None:
    """Why `options` cannot sign (a test signature fails), or None when they can: checked before a run."""
    if not options.enabled:
        return None
    with tempfile.TemporaryDirectory(prefix="acceptance-sign-check-") as tmp:
        probe = Path(tmp) / "probe"
        probe.write_text("recovery-acceptance signing check\n", encoding="utf-8")
        return sign_files([probe], options).problem


def sign_files(paths: Sequence[Path], options: SignOptions) -> SignOutcome:
    """Write `<file>.sig` beside each file; never raises for a missing key, agent or tool."""
    if not options.enabled:
        return SignOutcome(disabled=True)
    with tempfile.TemporaryDirectory(prefix="acceptance-sign-") as tmp:
        try:
            signer = _resolve(options, Path(tmp))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SignOutcome(problem=f"could not find a signing key: {exc}")
        if isinstance(signer, str):
            return SignOutcome(problem=signer)
        written: list[Path] = []
        for path in paths:
            sig = signature_path(path)
            sig.unlink(missing_ok=True)
            argv = [options.ssh_keygen, "-Y", "sign", "-n", NAMESPACE, "-f", str(signer.key_arg), str(path)]
            try:
                done = _run(argv, options)
            except subprocess.TimeoutExpired:
                return SignOutcome(
                    tuple(written),
                    signer.fingerprint,
                    signer.description,
                    problem=f"ssh-keygen did not sign {path.name} within {options.timeout_s:.0f} s "
                    "(a key with a passphrase needs an ssh-agent)",
                )
            if done.returncode != 0 or not sig.is_file():
                why = (done.stderr or done.stdout).strip().splitlines()
                if "passphrase" in done.stderr + done.stdout:
                    why.append(f"{signer.key_arg} has a passphrase: add it to the ssh-agent (ssh-add KEY)")
                return SignOutcome(
                    tuple(written),
                    signer.fingerprint,
                    signer.description,
                    problem=f"ssh-keygen could not sign {path.name}: {why[-1] if why else done.returncode}",
                )
            written.append(sig)
        return SignOutcome(tuple(written), signer.fingerprint, signer.description)
