"""Measurements and calibration profiles in a project file: rows beside the Project model.

The store keeps them as rows (scalar columns to list and sort, ``payload_json`` for the
payload); :mod:`workbench.measure.stored` gives the payloads their meaning. Reading never
refuses a project for a bad row: the reader that validates payloads skips and counts them.
Adding rows rewrites the project atomically under its lock, keeping the cached estimates and
every other row; all rows of one import land together or none do.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from workbench.core.project import Project
from workbench.store.estimate_cache import load_estimates
from workbench.store.lock import writing
from workbench.store.project_file import ProjectFileError, load_database, open_project, save_project
from workbench.store.schema import CARRIED_TABLES

#: How long an edit waits for another command writing the same project (as `project` commands).
WRITE_WAIT_S = 10.0


def read_rows(path: str | Path, table: str) -> list[dict[str, Any]]:
    """Every row of a carried table (never writes; an unreadable project raises ProjectFileError)."""
    if table not in CARRIED_TABLES:
        raise ValueError(f"unknown table '{table}'")
    conn = load_database(path)
    try:
        return [dict(row) for row in Database(conn)[table].rows]
    except sqlite3.DatabaseError as exc:
        raise ProjectFileError(f"cannot open project {path}: damaged project file ({exc})") from None
    finally:
        conn.close()


def _locked(path: str | Path, lock_held: bool) -> Any:
    # the window holds its open project's lock for as long as it shows it: it writes under that one
    return contextlib.nullcontext() if lock_held else writing(path, WRITE_WAIT_S)


def add_measurement_rows(path: str | Path, rows: Sequence[Mapping[str, Any]],
                         edit: Callable[[Project], Project] | None = None, *, lock_held: bool = False) -> list[int]:
    """Append measurement rows (without ``id``); returns the ids they got. ``edit`` changes the
    project in the same save (a scenario the measurements bring). All or nothing. ``lock_held``:
    the caller holds the project's lock already (the window that has it open)."""
    with _locked(path, lock_held):
        project = open_project(path)
        if edit is not None:
            project = edit(project)
        existing = read_rows(path, "measurements")
        ids = [row["id"] for row in existing if isinstance(row.get("id"), int)]
        first = max(ids, default=0) + 1
        added = [{**row, "id": first + i} for i, row in enumerate(rows)]
        save_project(project, path, estimates=load_estimates(path),
                     carried={"measurements": [*existing, *added]})
    return [row["id"] for row in added]


def remove_measurement_rows(path: str | Path, ids: Sequence[int], *, lock_held: bool = False) -> int:
    """Delete measurements by id; returns how many were there (nothing is written if none)."""
    with _locked(path, lock_held):
        project = open_project(path)
        existing = read_rows(path, "measurements")
        kept = [row for row in existing if row.get("id") not in set(ids)]
        if len(kept) != len(existing):
            save_project(project, path, estimates=load_estimates(path), carried={"measurements": kept})
    return len(existing) - len(kept)


def put_calibration_row(path: str | Path, row: Mapping[str, Any], *, lock_held: bool = False) -> None:
    """Add a calibration profile, replacing one of the same name."""
    with _locked(path, lock_held):
        project = open_project(path)
        existing = [r for r in read_rows(path, "calibrations") if r.get("name") != row["name"]]
        save_project(project, path, estimates=load_estimates(path), carried={"calibrations": [*existing, dict(row)]})
