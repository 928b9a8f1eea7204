"""Read-only projects open and never save in place; temp files of killed saves are cleaned up;
opening a WAL-mode project leaves nothing beside it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from project_factory import sample_project
from read_only import read_only_view

from workbench.store import ProjectFileError, load_estimates, open_project, read_only_reason, save_project
from workbench.store.files import remove_stale_temp_files


def _wal_mode(path: Path) -> None:
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    conn.close()
    assert path.read_bytes()[18:20] == b"\x02\x02"


def test_a_project_in_a_read_only_folder_opens_and_is_never_saved_in_place(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    save_project(sample_project(3), folder / "plan.gpuwb", estimates={"scenario 1": ("h", "{}")})
    save_project(sample_project(2), folder / "wal.gpuwb")
    _wal_mode(folder / "wal.gpuwb")
    with read_only_view(folder) as view:
        before = {p.name: p.read_bytes() for p in view.iterdir()}
        assert len(open_project(view / "plan.gpuwb").scenarios) == 3
        assert set(load_estimates(view / "plan.gpuwb")) == {"scenario 1"}
        assert len(open_project(view / "wal.gpuwb").scenarios) == 2  # WAL needs -shm: read from memory
        assert read_only_reason(view / "plan.gpuwb") == "the file is read-only"
        with pytest.raises(ProjectFileError) as info:
            save_project(sample_project(5), view / "plan.gpuwb")
        assert str(info.value) == (f"cannot save project {view / 'plan.gpuwb'}: the file is read-only; "
                                   "save it under another name")
        with pytest.raises(ProjectFileError, match=r"the folder .* is read-only; save it under another name"):
            save_project(sample_project(5), view / "new.gpuwb")
        assert {p.name: p.read_bytes() for p in view.iterdir()} == before


def test_a_read_only_file_in_a_writable_folder_is_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / "plan.gpuwb"
    save_project(sample_project(2), path)
    path.chmod(0o444)
    before = path.read_bytes()
    assert len(open_project(path).scenarios) == 2
    with pytest.raises(ProjectFileError, match="the file is read-only"):
        save_project(sample_project(4), path)  # a rename would replace it: respected anyway
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["plan.gpuwb"]


def test_opening_a_wal_mode_project_creates_nothing_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "wal.gpuwb"
    save_project(sample_project(2), path)
    _wal_mode(path)
    before = path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wal.gpuwb"]
    assert len(open_project(path).scenarios) == 2
    load_estimates(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wal.gpuwb"]
    assert path.read_bytes() == before


def test_changes_another_program_left_in_the_wal_are_read(tmp_path: Path) -> None:
    """A live WAL beside the file (another SQLite program wrote it): read from private copies."""
    path = tmp_path / "wal.gpuwb"
    save_project(sample_project(2), path)
    _wal_mode(path)
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE meta SET value = 'renamed in the WAL' WHERE key = 'name'")
    writer.commit()
    try:
        files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        assert len(files[f"{path.name}-wal"]) > 0
        assert open_project(path).name == "renamed in the WAL"
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files
    finally:
        writer.close()


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_stale_temp_files_are_removed_on_the_next_open_and_save(tmp_path: Path) -> None:
    path = tmp_path / "plan.gpuwb"
    save_project(sample_project(2), path)
    dead = _dead_pid()
    stale = [tmp_path / f".plan.gpuwb.{dead}.0badc0de.saving", tmp_path / f".plan.gpuwb.{dead}.0badc0de.saving-journal",
             tmp_path / ".plan.gpuwb.k2j4h_9x.saving"]  # an older version's name, without a pid
    live = tmp_path / f".plan.gpuwb.{os.getppid()}.12345678.saving"  # a save running in another process
    other = tmp_path / f".other.gpuwb.{dead}.0badc0de.saving"  # another project's: not ours to judge
    for file in [*stale, live, other]:
        file.write_bytes(b"partial")
    old = time.time() - 3600
    os.utime(stale[2], (old, old))
    open_project(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["plan.gpuwb", live.name, other.name])
    for file in stale:
        file.write_bytes(b"partial")
    os.utime(stale[2], (old, old))
    save_project(sample_project(3), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["plan.gpuwb", live.name, other.name])
    assert remove_stale_temp_files(path) == []


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


def test_saves_killed_midway_leave_litter_that_the_next_open_removes(tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    save_project(sample_project(1), path)
    code = SAVER.format(tests=str(Path(__file__).parent), path=str(path))
    littered = 0
    for delay in (0.1, 0.27, 0.43, 0.61):
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        names = sorted(p.name for p in tmp_path.iterdir())
        littered += len(names) > 1
        assert all(n == "p.gpuwb" or n.endswith(".saving") for n in names), names  # never a -journal
        open_project(path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p.gpuwb"]
    assert littered >= 1  # the kills did land mid-save (a save of 3000 scenarios takes most of the time)
