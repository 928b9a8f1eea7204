"""Damaged project files: every one refused in one line, "cannot open project FILE: why".

A file with our application id but a missing table or column, a broken or mistyped payload,
corrupt or missing bytes, or a path that is not a regular file at all must never open (least of
all as an empty project that the next save writes over the real one), never raise anything but
ProjectFileError, never hang, and never change a byte or leave a file beside it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from project_factory import sample_project

from workbench.core import Project
from workbench.store import ProjectFileError, load_estimates, open_project, save_project
from workbench.store.schema import APPLICATION_ID, expected_columns

TABLES = sorted(expected_columns())
COLUMNS = sorted((t, c) for t, cols in expected_columns().items() for c in cols)


@pytest.fixture(scope="module")
def good_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("good") / "good.gpuwb"
    project = sample_project(4)
    project = project.model_copy(update={"comparisons": ()})
    save_project(project, path, estimates={"scenario 0": ("abc", "{}")})
    return path


def _refused(path: Path, *needles: str) -> str:
    """Opening ``path`` is refused in one line naming it; nothing on disk changes."""
    folder_before = sorted(p.name for p in path.parent.iterdir()) if path.parent.is_dir() else None
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(ProjectFileError) as info:
        open_project(path)
    message = str(info.value)
    assert message.startswith(f"cannot open project {path}: "), message
    assert "\n" not in message and "Traceback" not in message
    for needle in needles:
        assert needle in message, message
    if before is not None:
        assert path.read_bytes() == before
    if folder_before is not None:
        assert sorted(p.name for p in path.parent.iterdir()) == folder_before
    return message


def _edited(good: Path, tmp_path: Path, sql: Callable[[sqlite3.Connection], None]) -> Path:
    path = tmp_path / "damaged.gpuwb"
    shutil.copy(good, path)
    conn = sqlite3.connect(path)
    sql(conn)
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("table", TABLES)
def test_each_missing_table_is_refused(good_file: Path, tmp_path: Path, table: str) -> None:
    path = _edited(good_file, tmp_path, lambda c: c.execute(f'DROP TABLE "{table}"'))
    _refused(path, "damaged project file", f"missing table '{table}'")


def _without_column(table: str, column: str) -> Callable[[sqlite3.Connection], None]:
    def edit(conn: sqlite3.Connection) -> None:
        keep = [c for c in sorted(expected_columns()[table]) if c != column]
        names = ", ".join(f'"{c}"' for c in keep)
        conn.execute(f'CREATE TABLE "new_{table}" AS SELECT {names} FROM "{table}"')
        conn.execute(f'DROP TABLE "{table}"')
        conn.execute(f'ALTER TABLE "new_{table}" RENAME TO "{table}"')
    return edit


@pytest.mark.parametrize(("table", "column"), COLUMNS)
def test_each_missing_column_is_refused(good_file: Path, tmp_path: Path, table: str, column: str) -> None:
    path = _edited(good_file, tmp_path, _without_column(table, column))
    _refused(path, "damaged project file", f"table '{table}' lacks column {column}")


BROKEN_ROWS = {
    "scenario payload is not JSON": ("UPDATE scenarios SET payload_json = '{\"name\": ' WHERE position = 1",
                                     "scenario 'scenario 1'"),
    "scenario payload is a number": ("UPDATE scenarios SET payload_json = 42", "scenario 'scenario 0'"),
    "scenario payload is NULL": ("UPDATE scenarios SET payload_json = NULL", "payload_json is missing"),
    "scenario payload misses a field": ("UPDATE scenarios SET payload_json = json_remove(payload_json, '$.model')",
                                        "model"),
    "scenario payload has a wrong type": (
        "UPDATE scenarios SET payload_json = json_set(payload_json, '$.batch_size', 'many')", "batch_size"),
    "scenario payload is a blob of bad UTF-8": ("UPDATE scenarios SET payload_json = X'FFFE7B7D'", "scenario"),
    "text that is not UTF-8": ("UPDATE scenarios SET payload_json = CAST(X'7BFF7D' AS TEXT)", "UTF-8"),
    "model payload is an array": ("UPDATE models SET payload_json = '[1, 2]'", "model 'tiny'"),
    "accelerator payload is broken": ("UPDATE accelerators SET payload_json = 'null'", "accelerator 'my-h100-cloud'"),
    "payload version is text": ("UPDATE scenarios SET schema_version = 'new'", "schema_version is str"),
    "payload version is newer": ("UPDATE scenarios SET schema_version = 5", "payload version 5"),
    "meta value is a blob": ("UPDATE meta SET value = X'00FF' WHERE key = 'name'", "meta entry 'name'"),
    "meta key is a blob": ("INSERT INTO meta VALUES (X'07', 'x')", "meta entry b'\\x07'"),
    "created is not a date": ("UPDATE meta SET value = 'yesterday-ish' WHERE key = 'created'", "created"),
    "duplicate scenario names": (("UPDATE scenarios SET payload_json = (SELECT payload_json FROM scenarios "
                                  "WHERE position = 0)"), "damaged project file"),
    "no migrations recorded": ("DELETE FROM _sqlite_migrations", "already exists"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_ROWS))
def test_broken_and_mistyped_payloads_are_refused(good_file: Path, tmp_path: Path, case: str) -> None:
    sql, needle = BROKEN_ROWS[case]
    path = _edited(good_file, tmp_path, lambda c: c.execute(sql))
    _refused(path, "damaged project file" if case != "payload version is newer" else "newer", needle)


def test_an_sqlite_file_with_our_id_but_no_tables_is_not_an_empty_project(tmp_path: Path) -> None:
    path = tmp_path / "empty-schema.gpuwb"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("CREATE TABLE unrelated (x)")
    conn.commit()
    conn.close()
    _refused(path, "missing table '_sqlite_migrations'")


def test_wrong_application_id_truncation_and_zero_length(good_file: Path, tmp_path: Path) -> None:
    data = good_file.read_bytes()
    foreign = tmp_path / "foreign.gpuwb"
    foreign.write_bytes(data[:68] + (0x12345678).to_bytes(4, "big") + data[72:])
    _refused(foreign, "an SQLite file, but not a workbench project")
    empty = tmp_path / "empty.gpuwb"
    empty.write_bytes(b"")
    _refused(empty, "empty file (0 bytes)")
    for cut in (10, 99, 100, 4096, len(data) - 1):
        part = tmp_path / f"cut{cut}.gpuwb"
        part.write_bytes(data[:cut])
        _refused(part)


def test_every_corrupt_page_is_refused(good_file: Path, tmp_path: Path) -> None:
    """Garbage over any one page (SQLite has no checksums; every page of our files is in use)."""
    data = good_file.read_bytes()
    page = int.from_bytes(data[16:18], "big")
    pages = len(data) // page
    assert pages > 5
    for number in range(1, pages):
        damaged = bytearray(data)
        damaged[number * page:(number + 1) * page] = (bytes(range(256)) * (page // 256))[::-1]
        path = tmp_path / f"page{number}.gpuwb"
        path.write_bytes(bytes(damaged))
        _refused(path, "damaged project file")
        path.unlink()


def test_paths_that_are_not_files_are_refused_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "folder.gpuwb"
    folder.mkdir()
    _refused(folder, "is a folder, not a project file")
    fifo = tmp_path / "pipe.gpuwb"
    os.mkfifo(fifo)
    _refused(fifo, "is a FIFO (named pipe), not a project file")  # no writer: reading would block
    _refused(Path("/dev/zero"), "is a device, not a project file")  # reading would never end
    _refused(tmp_path / "missing.gpuwb", "no such file")


def test_fifo_and_dev_zero_do_not_hang_the_cli(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.gpuwb"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        for argv in (["project", "list", str(path)], ["project", "add-scenario", str(path), "--model", "llama-3.1-8b",
                                                      "--gpu", "h100-sxm"]):
            result = subprocess.run([sys.executable, "-m", "workbench.cli", *argv], capture_output=True, text=True,
                                    timeout=60, check=False)
            assert result.returncode == 2 and result.stdout == ""
            assert result.stderr.strip() == f"gpu-workbench: error: cannot open project {path}: is " + (
                "a FIFO (named pipe), not a project file" if path == fifo else "a device, not a project file")


def test_a_damaged_file_is_never_saved_over_by_a_command(good_file: Path, tmp_path: Path) -> None:
    path = _edited(good_file, tmp_path, lambda c: c.execute("DROP TABLE scenarios"))
    before = path.read_bytes()
    result = subprocess.run([sys.executable, "-m", "workbench.cli", "project", "add-scenario", str(path), "--model",
                             "llama-3.1-8b", "--gpu", "h100-sxm"], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "missing table 'scenarios'" in result.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.gpuwb"]


def test_cached_estimates_with_wrong_types_are_skipped_not_fatal(good_file: Path, tmp_path: Path) -> None:
    path = _edited(good_file, tmp_path, lambda c: c.execute("INSERT INTO estimates VALUES ('x', 5, 'v', X'00')"))
    assert set(load_estimates(path)) == {"scenario 0"}
    assert len(open_project(path).scenarios) == 4


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.binary(min_size=1, max_size=16)), min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 1 << 16)))
def test_fuzzed_project_files_open_or_are_refused_in_one_line(good_file: Path, tmp_path: Path,
                                                              edits: list[tuple[int, bytes]], cut: int | None) -> None:
    data = bytearray(good_file.read_bytes())
    for offset, chunk in edits:
        offset %= len(data)
        data[offset:offset + len(chunk)] = chunk
    if cut is not None:
        del data[cut:]
    path = tmp_path / "fuzzed.gpuwb"
    path.write_bytes(bytes(data))
    try:
        project = open_project(path)
    except ProjectFileError as exc:
        assert str(exc).startswith(f"cannot open project {path}: ") and "\n" not in str(exc)
    else:
        assert isinstance(project, Project)
    assert path.read_bytes() == bytes(data)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("fuzzed")) == ["fuzzed.gpuwb"]
