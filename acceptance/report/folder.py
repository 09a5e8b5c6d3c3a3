"""The report folder: evidence files written scrubbed of secrets, under one root.

Default location `reports/<cluster>/<UTC start>/`; every text artifact goes through
`secrets.scrub_text` before it touches the disk.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from acceptance.errors import UsageError
from acceptance.report.secrets import scrub_obj, scrub_text


def folder_name(started_utc: datetime) -> str:
    """`20261130T001500Z`: sortable, no characters that need quoting."""
    return started_utc.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


@dataclass(frozen=True)
class ReportFolder:
    """A folder of evidence; paths given to `add_*` are relative to it.

    `scrubbed` maps each file this object wrote through `scrub_text` to the sha256 of the bytes it
    wrote: the scan before signing need not search those again while they are unchanged.
    """

    path: Path
    scrubbed: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def create(cls, root: Path, cluster: str, started_utc: datetime) -> ReportFolder:
        """`root/<cluster>/<UTC start>/`, with `-2`, `-3` ... when that name is taken."""
        base = root / cluster / folder_name(started_utc)
        candidate, n = base, 1
        while True:
            try:
                candidate.mkdir(parents=True, exist_ok=False)
                return cls(candidate)
            except FileExistsError:
                if not candidate.is_dir():
                    raise UsageError(f"report folder {candidate}: a file is in the way") from None
                n += 1
                candidate = base.with_name(f"{base.name}-{n}")
            except OSError as exc:
                raise UsageError(f"cannot create the report folder {candidate} ({exc.strerror or exc})") from None

    @classmethod
    def at(cls, path: Path) -> ReportFolder:
        """An explicit folder (`--report-dir`): created if needed; one that holds files is refused.

        A report signs what its folder holds, so an earlier run's evidence must never be merged
        into it. Anything that keeps the folder from being written is a usage error, before the run.
        """
        where = f"--report-dir {path}"
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                raise UsageError(f"{where}: {parent} is a file, not a folder")
        if path.exists() and not path.is_dir():
            raise UsageError(f"{where}: it is a file, not a folder")
        if path.is_dir() and any(path.iterdir()):
            raise UsageError(
                f"{where}: the folder is not empty (an earlier report?); a report is never merged into another: "
                "name a new folder, or leave --report-dir out for reports/<cluster>/<UTC time>/"
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
            probe = path / ".write-probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise UsageError(f"{where}: cannot write there ({exc.strerror or exc})") from None
        return cls(path)

    def _target(self, relpath: str | Path) -> Path:
        rel = PurePosixPath(str(relpath).replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise UsageError(f"report file {relpath!s}: expected a relative path inside the report folder")
        target = self.path.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def add_text(self, relpath: str | Path, text: str) -> Path:
        target = self._target(relpath)
        data = scrub_text(text).encode("utf-8")
        target.write_bytes(data)
        self.scrubbed[target.relative_to(self.path).as_posix()] = hashlib.sha256(data).hexdigest()
        return target

    def add_json(self, relpath: str | Path, obj: Any) -> Path:
        text = json.dumps(scrub_obj(obj), indent=2, default=str, ensure_ascii=False) + "\n"
        return self.add_text(relpath, text)

    def add_yaml(self, relpath: str | Path, obj: Any) -> Path:
        docs = obj if isinstance(obj, list) else [obj]
        text = yaml.safe_dump_all([scrub_obj(d) for d in docs], sort_keys=False)
        return self.add_text(relpath, text)

    def add_file(self, relpath: str | Path, src: Path) -> Path:
        """Copy a file in; text is scrubbed, binary content is copied as it is."""
        raw = src.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            target = self._target(relpath)
            shutil.copyfile(src, target)
            return target
        return self.add_text(relpath, text)

    def files(self) -> list[str]:
        """Every file under the folder, as sorted POSIX relative paths."""
        return sorted(p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file())
