"""Read and write project files — atomically, and never touching a file we cannot read.

* Saving writes a complete new database beside the target, fsyncs it and renames it over the
  target (``os.replace`` is atomic on POSIX): a crash or kill mid-save leaves the old file.
* Opening never writes: the file is checked (SQLite header, our application id, format version)
  and copied into memory, where older formats are migrated. A damaged, foreign or newer file is
  refused with a message; the file on disk is left byte-for-byte as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlite_utils import Database

from workbench import __version__
from workbench.core.errors import InputError, describe_validation_error
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.project import Comparison, Project
from workbench.core.scenario import Scenario
from workbench.store.schema import APPLICATION_ID, FORMAT_VERSION, migrations

SUFFIX = ".gpuwb"
_SQLITE_MAGIC = b"SQLite format 3\x00"


class ProjectFileError(InputError):
    """A project file cannot be opened or saved; the message says why and names the file."""


# --- writing ------------------------------------------------------------------------------------


def save_project(project: Project, path: str | Path, *, touch: bool = True,
                 estimates: Mapping[str, tuple[str, str]] | None = None) -> Project:
    """Write ``project`` to ``path`` atomically; returns the project with its ``modified`` time.

    ``estimates`` (scenario name -> (input hash, estimate JSON)) are cached results written in the
    same atomic file (see :mod:`workbench.store.estimate_cache`); entries for scenarios the project
    does not hold are dropped.
    """
    target = Path(path)
    if touch:
        project = project.model_copy(update={"modified": dt.datetime.now(dt.timezone.utc).replace(microsecond=0)})
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise ProjectFileError(f"{target}: folder {directory} does not exist")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".saving", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _write_database(project, tmp, estimates or {})
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, _file_mode(target))
        os.replace(tmp, target)
        _fsync_directory(directory)
        _remove_leftovers(target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ProjectFileError(f"{target}: cannot save ({exc.strerror or exc}); the previous file is unchanged") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return project


def _file_mode(target: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual umask-based ones."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _remove_leftovers(target: Path) -> None:
    """Temp files of saves that were killed before their rename (never the live file)."""
    for leftover in target.parent.glob(f".{target.name}.*.saving"):
        leftover.unlink(missing_ok=True)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_database(project: Project, file: Path, estimates: Mapping[str, tuple[str, str]]) -> None:
    conn = sqlite3.connect(file)
    try:
        db = Database(conn)
        migrations.apply(db)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        with db.atomic():
            db["meta"].insert_all(
                [
                    {"key": "format_version", "value": str(FORMAT_VERSION)},
                    {"key": "app_version", "value": __version__},
                    {"key": "schema_version", "value": str(project.schema_version)},
                    {"key": "name", "value": project.name},
                    {"key": "author", "value": project.author},
                    {"key": "notes", "value": project.notes},
                    {"key": "created", "value": project.created.isoformat()},
                    {"key": "modified", "value": project.modified.isoformat()},
                ]
            )
            db["models"].insert_all(
                {"id": ident, "name": m.name, "family": m.family, "schema_version": 1,
                 "payload_json": m.model_dump_json()}
                for ident, m in project.models.items()
            )
            db["accelerators"].insert_all(
                {"id": ident, "name": a.name, "schema_version": 1, "payload_json": a.model_dump_json()}
                for ident, a in project.accelerators.items()
            )
            db["scenarios"].insert_all(
                {
                    "name": s.name,
                    "position": i,
                    "model": s.model,
                    "gpu": s.gpu,
                    "workload": s.workload.value,
                    "num_gpus": s.num_gpus,
                    "schema_version": s.schema_version,
                    "payload_json": s.model_dump_json(),
                }
                for i, s in enumerate(project.scenarios)
            )
            db["comparisons"].insert_all(
                {"name": c.name, "position": i, "payload_json": c.model_dump_json()}
                for i, c in enumerate(project.comparisons)
            )
            names = {s.name for s in project.scenarios}
            db["estimates"].insert_all(
                {"scenario": name, "input_hash": digest, "app_version": __version__, "payload_json": payload}
                for name, (digest, payload) in estimates.items()
                if name in names
            )
        conn.commit()
    finally:
        conn.close()


# --- reading ------------------------------------------------------------------------------------


def check_project_file(path: str | Path) -> None:
    """Raise :class:`ProjectFileError` unless ``path`` looks like a project we can open."""
    load_database(path).close()


def load_database(path: str | Path) -> sqlite3.Connection:
    """An in-memory copy of the project file, migrated to the current format. Never writes."""
    file = Path(path)
    try:
        with open(file, "rb") as handle:
            head = handle.read(100)
    except FileNotFoundError:
        raise ProjectFileError(f"{file}: no such project file") from None
    except IsADirectoryError:
        raise ProjectFileError(f"{file}: is a folder, not a project file") from None
    except OSError as exc:
        raise ProjectFileError(f"{file}: cannot read ({exc.strerror or exc})") from None
    if not head.startswith(_SQLITE_MAGIC):
        raise ProjectFileError(f"{file}: not a workbench project (not an SQLite file)")
    if len(head) < 100:
        raise ProjectFileError(f"{file}: damaged project file (truncated header)")
    if int.from_bytes(head[68:72], "big") != APPLICATION_ID:
        raise ProjectFileError(f"{file}: an SQLite file, but not a workbench project")
    version = int.from_bytes(head[60:64], "big")
    if version > FORMAT_VERSION:
        raise ProjectFileError(
            f"{file}: written in project format {version} by a newer workbench; this version "
            f"({__version__}) reads formats up to {FORMAT_VERSION}. Update the workbench to open it"
        )
    memory = sqlite3.connect(":memory:")
    try:
        source = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            source.backup(memory)
        finally:
            source.close()
        status = memory.execute("PRAGMA quick_check").fetchone()[0]
        if status != "ok":
            raise ProjectFileError(f"{file}: damaged project file ({status})")
        migrations.apply(Database(memory))
    except sqlite3.DatabaseError as exc:
        memory.close()
        raise ProjectFileError(f"{file}: damaged project file ({exc})") from None
    except ProjectFileError:
        memory.close()
        raise
    return memory


def open_project(path: str | Path) -> Project:
    """Read a project file into a validated :class:`Project`."""
    file = Path(path)
    conn = load_database(file)
    try:
        return _read_project(Database(conn), file)
    except sqlite3.DatabaseError as exc:
        raise ProjectFileError(f"{file}: damaged project file ({exc})") from None
    finally:
        conn.close()


def _payload(file: Path, what: str, row: dict[str, Any], model: type) -> Any:
    version = row.get("schema_version", 1)
    if version is not None and version > 1:
        raise ProjectFileError(f"{file}: {what} uses payload version {version}, newer than this workbench reads")
    try:
        return model.model_validate_json(row["payload_json"])
    except ValidationError as exc:
        raise ProjectFileError(describe_validation_error(exc, f"{file}: {what}")) from None


def _read_project(db: Database, file: Path) -> Project:
    meta = {row["key"]: row["value"] for row in db["meta"].rows}
    models = {r["id"]: _payload(file, f"model '{r['id']}'", r, ModelArchitecture) for r in db["models"].rows}
    accelerators = {
        r["id"]: _payload(file, f"accelerator '{r['id']}'", r, Accelerator) for r in db["accelerators"].rows
    }
    scenarios = tuple(
        _payload(file, f"scenario '{r['name']}'", r, Scenario)
        for r in db["scenarios"].rows_where(order_by="position")
    )
    comparisons = tuple(
        _payload(file, f"comparison '{r['name']}'", r, Comparison)
        for r in db["comparisons"].rows_where(order_by="position")
    )
    data: dict[str, Any] = {
        "name": meta.get("name") or "Untitled project",
        "author": meta.get("author", ""),
        "notes": meta.get("notes", ""),
        "models": models,
        "accelerators": accelerators,
        "scenarios": scenarios,
        "comparisons": comparisons,
    }
    for key in ("created", "modified"):
        if meta.get(key):
            data[key] = meta[key]
    try:
        return Project.model_validate(data)
    except ValidationError as exc:
        raise ProjectFileError(describe_validation_error(exc, str(file))) from None


def export_json(project: Project) -> str:
    return project.model_dump_json(indent=2)


def import_json(text: str, source: str = "project JSON") -> Project:
    try:
        return Project.model_validate_json(text)
    except ValidationError as exc:
        raise ProjectFileError(describe_validation_error(exc, source)) from None


def scenario_from_json(text: str, source: str = "scenario JSON") -> Scenario:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProjectFileError(f"{source}: not valid JSON ({exc})") from None
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ProjectFileError(describe_validation_error(exc, source)) from None
