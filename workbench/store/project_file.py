"""Read and write project files — atomically, and never touching a file we cannot read.

* Saving writes a complete new database beside the target, fsyncs it and renames it over the
  target (``os.replace`` is atomic on POSIX): a crash or kill mid-save leaves the old file.
* Opening never writes: the file is checked (a regular file, SQLite header, our application id,
  format version), read into memory, migrated there, and checked again (every table and column,
  every payload and its types). A damaged, foreign or newer file is refused with one line,
  "cannot open project FILE: why"; the file on disk is left byte-for-byte as it was, and nothing
  is created beside it.
* Temp files of saves that were killed are removed by the next open or save of that project
  (:mod:`workbench.store.files`).
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import sqlite3
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlite_utils import Database

from workbench import __version__
from workbench.core.errors import InputError, describe_validation_error
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.project import Comparison, Project
from workbench.core.scenario import SCENARIO_PAYLOAD_NEWEST, Scenario
from workbench.store.files import (
    Unreadable,
    new_temp_file,
    one_line,
    os_reason,
    read_regular_file,
    remove_stale_temp_files,
    remove_temp_file,
    sqlite_reason,
)
from workbench.store.schema import (
    APPLICATION_ID,
    CARRIED_TABLES,
    FORMAT_VERSION,
    migrations,
    schema_problem,
)

SUFFIX = ".gpuwb"
_SQLITE_MAGIC = b"SQLite format 3\x00"


class ProjectFileError(InputError):
    """A project file cannot be opened or saved; the message says why and names the file."""


# --- writing ------------------------------------------------------------------------------------


def save_project(project: Project, path: str | Path, *, touch: bool = True,
                 estimates: Mapping[str, tuple[str, str]] | None = None,
                 carried: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> Project:
    """Write ``project`` to ``path`` atomically; returns the project with its ``modified`` time.

    ``estimates`` (scenario name -> (input hash, estimate JSON)) are cached results written in the
    same atomic file (see :mod:`workbench.store.estimate_cache`); entries for scenarios the project
    does not hold are dropped. The new file is read back and checked before it replaces the old
    one; any failure (a full disk included) leaves the old file byte for byte as it was.

    ``carried`` (table -> rows) replaces the tables of :data:`~workbench.store.schema.CARRIED_TABLES`
    (measurements, calibration profiles); a table it does not name is copied from the file being
    replaced, so a save that knows nothing of them (the window's) never drops them.
    """
    target = Path(path)
    if target.is_symlink():
        target = Path(os.path.realpath(target))  # replace the file the link points to, keep the link
    if touch:
        project = project.model_copy(update={"modified": dt.datetime.now(dt.UTC).replace(microsecond=0)})
    directory = target.parent if str(target.parent) else Path(".")
    existed = _check_save_target(target, directory)
    remove_stale_temp_files(target)
    tables = {**(_carried_from(target) if existed else {}), **(carried or {})}
    unchanged = "the previous file is unchanged" if existed else "nothing was written"
    tmp: Path | None = None
    try:
        tmp = new_temp_file(target)
        _write_database(project, tmp, estimates or {})
        _write_carried(tmp, tables)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        _verify(project, tmp, target, {t: len(rows) for t, rows in tables.items()})
        os.chmod(tmp, _file_mode(target))
        os.replace(tmp, target)
        tmp = None
        _fsync_directory(directory)
    except OSError as exc:
        raise ProjectFileError(f"cannot save project {_shown(target)}: {os_reason(exc)}; {unchanged}") from None
    except sqlite3.Error as exc:
        raise ProjectFileError(f"cannot save project {_shown(target)}: {sqlite_reason(exc)}; {unchanged}") from None
    finally:
        if tmp is not None:
            remove_temp_file(tmp)
    return project


def _shown(file: Path) -> str:
    return one_line(str(file))


def _check_save_target(target: Path, directory: Path) -> bool:
    """Refuse targets a save must not replace; True if a previous file exists."""
    if not directory.is_dir():
        raise ProjectFileError(f"cannot save project {_shown(target)}: folder {_shown(directory)} does not exist")
    try:
        info = target.lstat()
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise ProjectFileError(f"cannot save project {_shown(target)}: {os_reason(exc)}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise ProjectFileError(f"cannot save project {_shown(target)}: exists and is not a regular file")
    reason = read_only_reason(target)
    if reason:
        raise ProjectFileError(f"cannot save project {_shown(target)}: {reason}; save it under another name")
    return info is not None


def read_only_reason(path: str | Path) -> str | None:
    """Why a save to ``path`` cannot replace it ("the file is read-only", ...), or None.

    A save renames a new file over the old one, which the folder's permissions allow even for a
    read-only file: a file marked read-only is respected anyway (as editors do).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        info = target.stat()
    except OSError:
        info = None
    if info is not None and (not info.st_mode & 0o222 or not os.access(target, os.W_OK)):
        return "the file is read-only"
    if not os.access(directory, os.W_OK):
        return f"the folder {_shown(directory)} is read-only"
    return None


def _carried_from(target: Path) -> dict[str, list[dict[str, Any]]]:
    """The carried tables of the file a save replaces; none if it is not a readable project (a
    damaged file is replaced as before: there is nothing in it a save could keep)."""
    try:
        conn = load_database(target)
    except ProjectFileError:
        return {}
    try:
        db = Database(conn)
        return {table: [dict(row) for row in db[table].rows] for table in CARRIED_TABLES}
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def _verify(project: Project, written: Path, target: Path, carried: Mapping[str, int]) -> None:
    """Read the new file back before it replaces anything: a short write must not win."""
    try:
        conn = load_database(written)
    except ProjectFileError:
        raise OSError(errno.EIO, "the new file did not read back intact") from None
    try:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("models", "accelerators", "scenarios", "comparisons", *carried)}
    finally:
        conn.close()
    expected = {"models": len(project.models), "accelerators": len(project.accelerators),
                "scenarios": len(project.scenarios), "comparisons": len(project.comparisons), **carried}
    if counts != expected:
        raise OSError(errno.EIO, "the new file did not read back intact")


def _file_mode(target: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual umask-based ones."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


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


def _write_carried(file: Path, carried: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Add the carried tables' rows to a database :func:`_write_database` has just written."""
    if not any(carried.values()):
        return
    conn = sqlite3.connect(file)
    try:
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")
        db = Database(conn)
        with db.atomic():
            for table, rows in carried.items():
                if table not in CARRIED_TABLES:
                    raise ValueError(f"table '{table}' is not one a save carries")
                db[table].insert_all(dict(row) for row in rows)
        conn.commit()
    finally:
        conn.close()


def _write_database(project: Project, file: Path, estimates: Mapping[str, tuple[str, str]]) -> None:
    conn = sqlite3.connect(file)
    try:
        # The temp file is private until it is renamed, and it is fsynced before that: no journal
        # (so a killed save leaves no -journal file) and no syncs per transaction are needed.
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")
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
                    # Files from before this key existed open with their first scenario selected.
                    {"key": "current_scenario", "value": project.current_scenario},
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
                    "schema_version": s.payload_version,
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


def _refuse(file: Path, reason: str) -> ProjectFileError:
    return ProjectFileError(f"cannot open project {_shown(file)}: {reason}")


def load_database(path: str | Path) -> sqlite3.Connection:
    """An in-memory copy of the project file, migrated to the current format and checked.

    Never writes, and never leaves anything beside the file: the bytes are read once (a regular
    file of a sane size only) and SQLite works on the copy in memory, so a WAL-mode file gets no
    ``-wal``/``-shm`` files, and a read-only file or folder reads like any other.
    """
    file = Path(path)
    try:
        data = read_regular_file(file)
    except Unreadable as exc:
        raise _refuse(file, str(exc)) from None
    if not data:
        raise _refuse(file, "empty file (0 bytes), not a workbench project")
    if not data.startswith(_SQLITE_MAGIC):
        raise _refuse(file, "not a workbench project (not an SQLite file)")
    if len(data) < 100:
        raise _refuse(file, "damaged project file (truncated header)")
    if int.from_bytes(data[68:72], "big") != APPLICATION_ID:
        raise _refuse(file, "an SQLite file, but not a workbench project")
    version = int.from_bytes(data[60:64], "big")
    if version > FORMAT_VERSION:
        raise _refuse(file, f"written in project format {version} by a newer workbench; this version "
                            f"({__version__}) reads formats up to {FORMAT_VERSION}. Update the workbench to open it")
    memory = sqlite3.connect(":memory:")
    try:
        _load_into(memory, file, data)
        status = memory.execute("PRAGMA quick_check").fetchone()[0]
        if status != "ok":
            raise _refuse(file, f"damaged project file ({one_line(str(status))})")
        # What migrations.apply needs must be there before it runs: on a file with no record of
        # them it would create every table, and an empty project would open.
        problem = schema_problem(memory, only=("_sqlite_migrations",))
        if problem:
            raise _refuse(file, f"damaged project file ({problem})")
        try:
            migrations.apply(Database(memory))
        except (KeyError, TypeError, ValueError) as exc:
            raise _refuse(file, f"damaged project file (migration records: {one_line(repr(exc))})") from None
        problem = schema_problem(memory)
        if problem:
            raise _refuse(file, f"damaged project file ({problem})")
    except sqlite3.Error as exc:
        memory.close()
        raise _refuse(file, f"damaged project file ({one_line(str(exc))})") from None
    except UnicodeDecodeError as exc:
        # sqlite3 decodes its own error text as UTF-8; a damaged schema puts raw bytes in it
        # ('malformed database schema ... near "\x80EY"'), which then cannot be decoded.
        memory.close()
        shown = exc.object.decode("utf-8", "backslashreplace") if isinstance(exc.object, bytes) else ""
        raise _refuse(file, f"damaged project file ({one_line(shown) or 'unreadable schema'})") from None
    except OSError as exc:  # the private copy of a WAL-mode file could not be made
        memory.close()
        raise _refuse(file, f"cannot read ({os_reason(exc)})") from None
    except BaseException:
        memory.close()
        raise
    return memory


def _load_into(memory: sqlite3.Connection, file: Path, data: bytes) -> None:
    """Put the file's database into ``memory``, with the committed pages of a WAL file beside it."""
    wal_mode = data[18] == 2 or data[19] == 2
    wal = Path(f"{file}-wal")
    if wal_mode:
        try:
            wal_data = read_regular_file(wal)
        except Unreadable:
            wal_data = b""
        if wal_data:
            # Pages another program committed to the WAL but not yet to the file: let SQLite
            # recover them from private copies (the originals stay untouched).
            with tempfile.TemporaryDirectory(prefix="gpuwb-open-") as folder:
                copy = Path(folder) / "project.db"
                copy.write_bytes(data)
                Path(f"{copy}-wal").write_bytes(wal_data)
                source = sqlite3.connect(copy)
                try:
                    source.backup(memory)
                finally:
                    source.close()
            return
        # An in-memory database cannot be in WAL mode: read the pages as a rollback-journal file.
        patched = bytearray(data)
        patched[18] = patched[19] = 1
        data = bytes(patched)
    memory.deserialize(data)


def open_project(path: str | Path) -> Project:
    """Read a project file into a validated :class:`Project`; anything wrong is one line."""
    file = Path(path)
    remove_stale_temp_files(file)
    conn = load_database(file)
    try:
        return _read_project(Database(conn), file)
    except sqlite3.Error as exc:
        raise _refuse(file, f"damaged project file ({one_line(str(exc))})") from None
    except (KeyError, TypeError, ValueError, AttributeError, UnicodeDecodeError, RecursionError) as exc:
        raise _refuse(file, f"damaged project file ({type(exc).__name__}: {one_line(str(exc))})") from None
    finally:
        conn.close()


def _payload(file: Path, what: str, row: dict[str, Any], model: type, newest: int = 1) -> Any:
    version = row.get("schema_version", 1)
    if version is not None and not isinstance(version, int):
        raise _refuse(file, f"damaged project file ({what}: schema_version is {type(version).__name__}, "
                            "not a number)")
    if version is not None and version > newest:
        raise _refuse(file, f"{what} uses payload version {version}, newer than this workbench reads")
    payload = row.get("payload_json")
    if not isinstance(payload, str | bytes):
        raise _refuse(file, f"damaged project file ({what}: payload_json is "
                            f"{'missing' if payload is None else type(payload).__name__}, not JSON text)")
    try:
        return model.model_validate_json(payload)
    except ValidationError as exc:
        raise _refuse(file, one_line(describe_validation_error(exc, f"damaged project file ({what})"))) from None


def _read_project(db: Database, file: Path) -> Project:
    meta = {}
    for row in db["meta"].rows:
        if not isinstance(row["key"], str) or not isinstance(row["value"], str | None):
            raise _refuse(file, f"damaged project file (meta entry {one_line(repr(row['key']))} is not text)")
        meta[row["key"]] = row["value"]
    models = {r["id"]: _payload(file, f"model {_name(r['id'])}", r, ModelArchitecture) for r in db["models"].rows}
    accelerators = {
        r["id"]: _payload(file, f"accelerator {_name(r['id'])}", r, Accelerator) for r in db["accelerators"].rows
    }
    scenarios = tuple(
        _payload(file, f"scenario {_name(r['name'])}", r, Scenario, SCENARIO_PAYLOAD_NEWEST)
        for r in db["scenarios"].rows_where(order_by="position")
    )
    comparisons = tuple(
        _payload(file, f"comparison {_name(r['name'])}", r, Comparison)
        for r in db["comparisons"].rows_where(order_by="position")
    )
    data: dict[str, Any] = {
        "name": meta.get("name") or "Untitled project",
        "author": meta.get("author") or "",
        "notes": meta.get("notes") or "",
        "current_scenario": meta.get("current_scenario") or "",
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
        raise _refuse(file, one_line(describe_validation_error(exc, "damaged project file"))) from None


def _name(value: object) -> str:
    return one_line(f"'{value}'")


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
