"""Autosave: recovery copies of unsaved work, offered back after a crash.

Each open project (or an untitled one) has a recovery file in the user data folder, written
atomically like a normal save. A clean close deletes it; a crash leaves it for the next launch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from workbench.core.atomic_write import verify_json, write_text
from workbench.core.project import Project
from workbench.paths import user_data_dir
from workbench.store.project_file import ProjectFileError, open_project, save_project


@dataclass(frozen=True, slots=True)
class Recovery:
    recovery_file: Path
    original: Path | None  # None for a project never saved

    def load(self) -> Project:
        return open_project(self.recovery_file)

    def discard(self) -> None:
        self.recovery_file.unlink(missing_ok=True)
        _sidecar(self.recovery_file).unlink(missing_ok=True)


def recovery_dir() -> Path:
    return user_data_dir() / "recovery"


def _sidecar(recovery_file: Path) -> Path:
    return recovery_file.with_suffix(".json")


def recovery_file_for(original: Path | None, session: str = "untitled") -> Path:
    key = str(original.resolve()) if original is not None else f"untitled-{session}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return recovery_dir() / f"{digest}.gpuwb"


def write_recovery(project: Project, original: Path | None, session: str = "untitled") -> Path:
    """Save a recovery copy of ``project`` (atomic); returns its path."""
    folder = recovery_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = recovery_file_for(original, session)
    save_project(project, target, touch=False)
    # The sidecar says which file the copy belongs to: written aside and renamed, so a crash in the
    # middle never leaves a half-written one that would orphan the copy.
    write_text(
        _sidecar(target), json.dumps({"original": str(original) if original else None}), verify=verify_json
    )
    return target


def pending_recoveries() -> list[Recovery]:
    """Recovery copies left by sessions that did not close cleanly, newest first."""
    folder = recovery_dir()
    if not folder.is_dir():
        return []
    found = []
    for file in sorted(folder.glob("*.gpuwb"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            meta = json.loads(_sidecar(file).read_text(encoding="utf-8"))
            original = Path(meta["original"]) if meta.get("original") else None
        except (OSError, ValueError, KeyError):
            original = None
        found.append(Recovery(file, original))
    return found


def discard_recovery(original: Path | None, session: str = "untitled") -> None:
    Recovery(recovery_file_for(original, session), original).discard()


__all__ = ["ProjectFileError", "Recovery", "discard_recovery", "pending_recoveries", "recovery_dir",
           "recovery_file_for", "write_recovery"]
