"""Project files: exact round trips, refusal of bad files without touching them, atomic saves."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from project_factory import projects, sample_project

from workbench.core import Project
from workbench.store import (
    ProjectFileError,
    ProjectLock,
    ProjectLockedError,
    export_json,
    import_json,
    open_project,
    pending_recoveries,
    save_project,
    write_recovery,
)
from workbench.store.schema import APPLICATION_ID

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "projects"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(project=projects)
def test_round_trip_is_identical(project: Project, tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    saved = save_project(project, path, touch=False)
    assert open_project(path) == saved == project


def test_json_export_import_round_trip() -> None:
    project = sample_project()
    assert import_json(export_json(project)) == project


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("format-v*.gpuwb")))
def test_released_format_fixtures_open(fixture: str, tmp_path: Path) -> None:
    """A file written by each released format version opens and holds what it was written with."""
    copy = tmp_path / fixture
    shutil.copy(FIXTURES / fixture, copy)
    before = copy.read_bytes()
    project = open_project(copy)
    assert project.name == "Sizing for Q3"
    assert [s.name for s in project.scenarios] == ["scenario 0", "scenario 1", "scenario 2"]
    assert project.accelerators["my-h100-cloud"].cloud_usd_per_hour == 2.1
    assert copy.read_bytes() == before  # opening (and migrating) never writes


def test_a_file_from_before_the_saved_selection_opens_with_none(tmp_path: Path) -> None:
    """Format 1 files written before the selected scenario was kept: no selection (the first)."""
    copy = tmp_path / "format-v1.gpuwb"
    shutil.copy(FIXTURES / "format-v1.gpuwb", copy)
    assert open_project(copy).current_scenario == ""


def test_the_selected_scenario_is_kept(tmp_path: Path) -> None:
    project = sample_project().model_copy(update={"current_scenario": "scenario 2"})
    path = tmp_path / "p.gpuwb"
    save_project(project, path)
    assert open_project(path).current_scenario == "scenario 2"


def test_at_least_the_first_format_has_a_fixture() -> None:
    assert (FIXTURES / "format-v1.gpuwb").is_file()


def _refused_unchanged(path: Path, *needles: str) -> None:
    before = path.read_bytes()
    with pytest.raises(ProjectFileError) as info:
        open_project(path)
    assert str(path) in str(info.value)
    for needle in needles:
        assert needle in str(info.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_truncated_file_is_refused_and_untouched(tmp_path: Path) -> None:
    full = tmp_path / "full.gpuwb"
    save_project(sample_project(50), full)
    data = full.read_bytes()
    for cut in (50, 1000, len(data) // 2):
        part = tmp_path / "cut" / f"cut{cut}.gpuwb"
        part.parent.mkdir(exist_ok=True)
        part.write_bytes(data[:cut])
        _refused_unchanged(part, "damaged")
        part.unlink()


def test_random_bytes_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gpuwb"
    junk.write_bytes(os.urandom(5000))
    _refused_unchanged(junk, "not a workbench project")


def test_random_bytes_after_a_valid_header_are_refused(tmp_path: Path) -> None:
    good = tmp_path / "x.gpuwb"
    save_project(sample_project(), good)
    data = bytearray(good.read_bytes())
    data[100:] = os.urandom(len(data) - 100)
    good.write_bytes(bytes(data))
    _refused_unchanged(good, "damaged")


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("create table t (x)")
    conn.commit()
    conn.close()
    _refused_unchanged(other, "not a workbench project")


def test_newer_format_is_refused_naming_the_version(tmp_path: Path) -> None:
    newer = tmp_path / "newer.gpuwb"
    save_project(sample_project(), newer)
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 7")
    conn.commit()
    conn.close()
    _refused_unchanged(newer, "format 7", "newer workbench")


def test_save_into_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ProjectFileError, match="does not exist"):
        save_project(sample_project(), tmp_path / "nope" / "p.gpuwb")


def test_failed_save_leaves_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.gpuwb"
    save_project(sample_project(2), path)
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ProjectFileError, match="previous file is unchanged"):
        save_project(sample_project(9), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.gpuwb"]


SAVER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from project_factory import sample_project
    from workbench.store import save_project
    big = sample_project(3000)
    print("ready", flush=True)
    i = 0
    while True:
        save_project(big.model_copy(update={{"name": f"version {{i}}"}}), {path!r})
        i += 1
""")


def test_save_killed_midway_leaves_old_or_new_content(tmp_path: Path) -> None:
    """SIGKILL a process while it saves, many times: the file always opens, old or new."""
    path = tmp_path / "p.gpuwb"
    save_project(sample_project(1).model_copy(update={"name": "original"}), path)
    code = SAVER.format(tests=str(Path(__file__).parent), path=str(path))
    for delay in (0.05, 0.13, 0.21, 0.34, 0.55, 0.8):
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        project = open_project(path)
        assert project.name == "original" or project.name.startswith("version ")
        assert len(project.scenarios) in (1, 3000)
        assert (project.name == "original") == (len(project.scenarios) == 1)


def test_lock_reports_another_live_instance(tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    save_project(sample_project(), path)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from workbench.store import ProjectLock
        ProjectLock({str(path)!r}).acquire()
        print("locked", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ProjectLockedError, match=f"process {holder.pid}"):
            ProjectLock(path).acquire()
    finally:
        holder.kill()
        holder.wait()
    lock = ProjectLock(path)
    lock.acquire()  # the holder died: its lock is stale and taken over
    assert lock.held
    lock.release()
    assert not lock.path.exists()


def test_recovery_copy_is_offered_back(tmp_path: Path) -> None:
    project = sample_project(4)
    original = tmp_path / "work.gpuwb"
    write_recovery(project, original)
    found = pending_recoveries()
    assert [r.original for r in found] == [original]
    assert found[0].load().scenarios == project.scenarios
    found[0].discard()
    assert pending_recoveries() == []


def test_header_marks_our_files(tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    save_project(sample_project(), path)
    header = path.read_bytes()[:100]
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
