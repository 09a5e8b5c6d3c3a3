"""MANIFEST.json: every file of a report folder with its sha256 and size."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from acceptance.errors import ParseError
from acceptance.report.secrets import scrub_obj

MANIFEST_NAME = "MANIFEST.json"
FORMAT = "recovery-acceptance-manifest/1"
# Files that describe the folder rather than belong to it: the manifest, its signature and each party's
# countersignature (``MANIFEST.json.customer.sig``, added when the other party accepts the report).
SELF = frozenset(
    {MANIFEST_NAME, MANIFEST_NAME + ".sig", *(f"{MANIFEST_NAME}.{p}.sig" for p in ("provider", "customer"))}
)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def listed_files(folder: Path) -> list[str]:
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() not in SELF
    )


def build_manifest(
    folder: Path, *, created_utc: str, signing: Mapping[str, Any], provenance: Mapping[str, Any]
) -> dict[str, Any]:
    files = []
    for rel in listed_files(folder):
        path = folder / rel
        files.append({"path": rel, "sha256": sha256_file(path), "size": path.stat().st_size})
    return {
        "format": FORMAT,
        "created_utc": created_utc,
        "signing": dict(signing),
        "provenance": scrub_obj(dict(provenance)),
        "files": files,
    }


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> Path:
    path = folder / MANIFEST_NAME
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_manifest(path: Path) -> dict[str, Any]:
    """Load and shape-check a manifest; ParseError names the file and what was expected."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ParseError(str(path), 0, "", "a UTF-8 JSON manifest") from exc
    except json.JSONDecodeError as exc:
        raise ParseError(str(path), exc.lineno, exc.msg, "a JSON manifest") from exc
    except RecursionError:
        raise ParseError(str(path), 1, "", "a JSON manifest (this one nests too deeply to read)") from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT or not isinstance(obj.get("files"), list):
        raise ParseError(str(path), 0, "", f'an object with "format": "{FORMAT}" and a "files" list')
    for entry in obj["files"]:
        if not (isinstance(entry, dict) and {"path", "sha256", "size"} <= set(entry)):
            raise ParseError(str(path), 0, str(entry)[:80], 'file entries with "path", "sha256" and "size"')
    return obj


def _outside(root: Path, rel: str) -> str | None:
    """Why a listed path does not name a file of the report folder (absolute, `..`, a link out), or None."""
    pure = PurePosixPath(rel)
    if not pure.parts or pure.is_absolute() or PureWindowsPath(rel).anchor:
        return "refused: not a relative path; a manifest lists files inside its report folder only"
    if ".." in pure.parts:
        return "refused: the path leaves the report folder (..)"
    try:
        resolved = (root / rel).resolve()
    except (OSError, RuntimeError):
        return "refused: the path cannot be resolved"
    if resolved != root and root not in resolved.parents:
        return f"refused: a link that leaves the report folder (to {resolved})"
    return None


def check_files(folder: Path, manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(path, what is wrong) for each file that changed, disappeared or appeared since the manifest."""
    problems: list[tuple[str, str]] = []
    listed = set()
    root = folder.resolve()
    for entry in manifest["files"]:
        rel = str(entry["path"])
        listed.add(rel)
        outside = _outside(root, rel)
        if outside:
            problems.append((rel, outside))
            continue
        path = folder / rel
        if not path.is_file():
            problems.append((rel, f"missing (listed in {MANIFEST_NAME}, not in the folder)"))
            continue
        actual = sha256_file(path)
        if actual != entry["sha256"]:
            problems.append(
                (
                    rel,
                    f"changed since it was listed: sha256 {actual} (listed {entry['sha256']}), "
                    f"size {path.stat().st_size} (listed {entry['size']})",
                )
            )
    for rel in listed_files(folder):
        if rel not in listed:
            problems.append((rel, f"not listed in {MANIFEST_NAME} (added after the report was made)"))
    return problems
