"""Where the read-only reference data of ../shared lives, for tests that use it.

Those tests skip when ../shared is absent (a clone without the steering repo beside it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ACCEPTANCE_SHARED_DIR", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
CORPUS2 = SHARED / "corpus-wave2"
CORPUS3 = SHARED / "corpus-wave3"
K8S = SHARED / "k8s"
FIXTURES = ROOT / "fixtures"


def corpus_files(kind: str) -> list[Path]:
    """Every sample of one corpus folder (``nccl``, ``dcgm``, ``trainlogs``), .source files excluded."""
    folder = CORPUS / kind
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".source")


needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is absent")


def wave2_files(kind: str) -> list[Path]:
    """Every sample of one ``corpus-wave2`` folder (``pytorch-nccl-watchdog``, ``kubectl`` ...), .source excluded."""
    folder = CORPUS2 / kind
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".source")


def wave2(kind: str, name: str) -> str:
    """The text of one corpus-wave2 sample (the test is skipped when ../shared is absent)."""
    path = CORPUS2 / kind / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path.read_text(encoding="utf-8")


def wave3_files(kind: str) -> list[Path]:
    """Every sample of one ``corpus-wave3`` folder (``watchdog``, ``kubectl``, ``slurm``, ``trainlogs``)."""
    folder = CORPUS3 / kind
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix != ".source")


def wave3(kind: str, name: str) -> str:
    """The text of one corpus-wave3 sample (the test is skipped when ../shared is absent)."""
    path = CORPUS3 / kind / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path.read_text(encoding="utf-8", errors="replace")
