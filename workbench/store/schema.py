"""The project file's schema, as named sqlite-utils migrations.

A project file is an SQLite database marked with our ``application_id``; ``user_version`` holds
the format version. Scalar columns hold what is listed and sorted; ``payload_json`` columns hold
pydantic payloads, each with its own ``schema_version``. Add a step at the end to change the
schema; never edit a released step (files in the wild have run it).
"""

from __future__ import annotations

import functools
import sqlite3

from sqlite_utils import Database, Migrations

#: "GPWB" as a big-endian int: marks a SQLite file as a workbench project.
APPLICATION_ID = 0x47505742
#: Bumped by every migration step that changes what a file holds. 2: measurements and
#: calibration profiles (a workbench reading format 1 would drop them on its next save).
FORMAT_VERSION = 2

migrations = Migrations("workbench_project")


@migrations(name="0001_initial")
def _initial(db: Database) -> None:
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["models"].create(
        {"id": str, "name": str, "family": str, "schema_version": int, "payload_json": str}, pk="id"
    )
    db["accelerators"].create(
        {"id": str, "name": str, "schema_version": int, "payload_json": str}, pk="id"
    )
    db["scenarios"].create(
        {
            "name": str,
            "position": int,
            "model": str,
            "gpu": str,
            "workload": str,
            "num_gpus": int,
            "schema_version": int,
            "payload_json": str,
        },
        pk="name",
    )
    db["scenarios"].create_index(["position"])
    db["comparisons"].create({"name": str, "position": int, "payload_json": str}, pk="name")
    db["estimates"].create(
        {"scenario": str, "input_hash": str, "app_version": str, "payload_json": str}, pk="scenario"
    )


@migrations(name="0002_measurements_and_calibrations")
def _measurements(db: Database) -> None:
    # One row per imported measurement, tied to a scenario by name; payload_json holds the
    # measurement and the scenario it is compared with (see workbench.measure.stored).
    db["measurements"].create(
        {
            "id": int,
            "scenario": str,
            "source_format": str,
            "file_name": str,
            "imported": str,
            "schema_version": int,
            "payload_json": str,
        },
        pk="id",
    )
    db["measurements"].create_index(["scenario"])
    db["calibrations"].create(
        {"name": str, "created": str, "schema_version": int, "payload_json": str}, pk="name"
    )


#: Tables a save carries over from the file it replaces when the caller does not give them:
#: data the Project model does not hold (see workbench.store.measurements).
CARRIED_TABLES = ("measurements", "calibrations")


@functools.cache
def expected_columns() -> dict[str, frozenset[str]]:
    """Every table (and its columns) a file holds after all migrations: built by running them."""
    conn = sqlite3.connect(":memory:")
    try:
        migrations.apply(Database(conn))
        return _columns(conn)
    finally:
        conn.close()


def _columns(conn: sqlite3.Connection, tables: list[str] | None = None) -> dict[str, frozenset[str]]:
    if tables is None:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    found = {t: frozenset(str(r[0]) for r in conn.execute("SELECT name FROM pragma_table_info(?)", (t,)))
             for t in tables}
    return {t: columns for t, columns in found.items() if columns}


def schema_problem(conn: sqlite3.Connection, only: tuple[str, ...] = ()) -> str | None:
    """What is missing from a (migrated) project database, or None when every table and column is there.

    ``only``: check just these tables.
    """
    expected = {t: c for t, c in expected_columns().items() if not only or t in only}
    found = _columns(conn, list(expected))
    for table, columns in sorted(expected.items()):
        if table not in found:
            return f"missing table '{table}'"
        missing = sorted(columns - found[table])
        if missing:
            return f"table '{table}' lacks column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    return None
