"""Saving on a full disk: the old file stays byte for byte, the error is one line, nothing is left.

On a real 256 KiB tmpfs where the platform lets us mount one (root on Linux; skipped with the
reason otherwise), and everywhere with the failure injected (ENOSPC from the OS, SQLITE_FULL
from SQLite, a short write caught by reading the new file back).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from project_factory import sample_project

from workbench.store import ProjectFileError, open_project, save_project
from workbench.store import project_file as project_file_module


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "tiny"
    folder.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
                                 capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a small tmpfs here ({exc})")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({mounted.stderr.strip() or 'mount failed'})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=False)


def _fill(folder: Path) -> Path:
    """Take every free byte of the file system."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 1024)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _one_line_full(info: pytest.ExceptionInfo[ProjectFileError], path: Path, rest: str) -> None:
    assert str(info.value) == f"cannot save project {path}: the disk is full; {rest}"


def test_a_save_too_big_for_the_disk_leaves_the_old_file(tiny_disk: Path) -> None:
    path = tiny_disk / "plan.gpuwb"
    save_project(sample_project(2), path)
    before = path.read_bytes()
    with pytest.raises(ProjectFileError) as info:
        save_project(sample_project(3000), path)  # about 1.5 MiB: never fits in 256 KiB
    _one_line_full(info, path, "the previous file is unchanged")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["plan.gpuwb"]


def test_a_same_size_save_on_a_full_disk_leaves_the_old_file(tiny_disk: Path) -> None:
    path = tiny_disk / "plan.gpuwb"
    save_project(sample_project(2), path)
    before = path.read_bytes()
    filler = _fill(tiny_disk)
    with pytest.raises(ProjectFileError) as info:
        save_project(sample_project(2).model_copy(update={"name": "renamed"}), path)
    _one_line_full(info, path, "the previous file is unchanged")
    assert path.read_bytes() == before
    with pytest.raises(ProjectFileError) as info:
        save_project(sample_project(1), tiny_disk / "new.gpuwb")
    _one_line_full(info, tiny_disk / "new.gpuwb", "nothing was written")
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler", "plan.gpuwb"]
    filler.unlink()  # space again: the same save works
    save_project(sample_project(2).model_copy(update={"name": "renamed"}), path)
    assert open_project(path).name == "renamed"


def test_the_cli_on_a_full_disk_says_so_in_one_line(tiny_disk: Path) -> None:
    path = tiny_disk / "plan.gpuwb"
    save_project(sample_project(2), path)
    before = path.read_bytes()
    _fill(tiny_disk)
    result = subprocess.run([sys.executable, "-m", "workbench.cli", "project", "add-scenario", str(path), "--name",
                             "more", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"gpu-workbench: error: cannot save project {path}: the disk is full; "
                             "the previous file is unchanged\n")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["filler", "plan.gpuwb"]


# --- the same failures, injected (every platform) ------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "plan.gpuwb"
    save_project(sample_project(2), path)
    return path, path.read_bytes()


def _unchanged(path: Path, before: bytes) -> None:
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_enospc_from_the_os_leaves_the_old_file(saved: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    path, before = saved

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(project_file_module.os, "fsync", full)
    with pytest.raises(ProjectFileError) as info:
        save_project(sample_project(7), path)
    _one_line_full(info, path, "the previous file is unchanged")
    _unchanged(path, before)


def test_sqlite_full_leaves_the_old_file(saved: tuple[Path, bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLITE_FULL is what SQLite reports when its writes hit a full disk (here: a page cap)."""
    path, before = saved
    connect = sqlite3.connect

    def capped(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]
        conn.execute("PRAGMA max_page_count = 4")
        return conn

    monkeypatch.setattr(project_file_module.sqlite3, "connect", capped)
    with pytest.raises(ProjectFileError) as info:
        save_project(sample_project(50), path)
    _one_line_full(info, path, "the previous file is unchanged")
    monkeypatch.undo()
    _unchanged(path, before)


def test_a_short_write_is_caught_before_it_replaces_anything(saved: tuple[Path, bytes],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path, before = saved
    write = project_file_module._write_database

    def short(project, file, estimates):  # type: ignore[no-untyped-def]
        write(project, file, estimates)
        data = file.read_bytes()
        file.write_bytes(data[: len(data) // 2])  # what a file system that lost the tail leaves

    monkeypatch.setattr(project_file_module, "_write_database", short)
    with pytest.raises(ProjectFileError, match="the new file did not read back intact; the previous file is unchanged"):
        save_project(sample_project(40), path)
    _unchanged(path, before)
