"""The project lock: atomic under contention, taken over from dead holders, never shared."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from concurrent_writer import add_scenarios

from workbench.core import Project
from workbench.store import ProjectLock, ProjectLockedError, open_project, save_project
from workbench.store import lock as lock_module
from workbench.store.lock import WRITE

WRITERS, EDITS = 6, 10


@pytest.mark.parametrize(("wait_s", "spin"), [(10.0, 0), (0.0, 0), (0.0, 100_000)])
def test_concurrent_writers_lose_no_edit(tmp_path: Path, wait_s: float, spin: int) -> None:
    """Processes released together by a barrier each add scenarios under the lock, many times.

    Waiting (or retrying) writers all land; writers that do not wait may be refused, and then
    their edit is not in the file. Every edit reported saved is in the file: with a
    check-then-write lock, two spinning writers took it at once and one edit was lost.
    """
    path = tmp_path / "shared.gpuwb"
    save_project(Project(name="shared"), path)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(WRITERS)
        with context.Pool(WRITERS) as pool:
            jobs = [pool.apply_async(add_scenarios, (str(path), w, EDITS, barrier, wait_s, spin)) for w in range(WRITERS)]
            saved = [name for job in jobs for name in job.get(timeout=120)]
    landed = [s.name for s in open_project(path).scenarios]
    assert sorted(landed) == sorted(saved)
    if wait_s or spin:
        assert len(saved) == WRITERS * EDITS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.gpuwb"]  # no lock or temp file left


def test_one_process_reopening_its_own_project_is_not_refused(tmp_path: Path) -> None:
    first, second = ProjectLock(tmp_path / "p.gpuwb"), ProjectLock(tmp_path / "p.gpuwb")
    first.acquire()
    second.acquire()
    assert first.held and second.held and first.owner() is None
    assert json.loads(first.path.read_text())["pid"] == os.getpid()
    second.release()
    assert first.path.exists()  # only the lock that took the file gives it back
    first.release()
    assert not first.path.exists()
    (tmp_path / "link").symlink_to(tmp_path)
    first.acquire()
    by_link = ProjectLock(tmp_path / "link" / "p.gpuwb")
    by_link.acquire()  # the same file by another path: still this process's own lock
    assert by_link.held
    by_link.release()
    assert first.path.exists()  # only the lock that took the file gives it back
    first.release()
    assert not first.path.exists()


HOLDER = textwrap.dedent("""
    import sys, time
    from workbench.store import ProjectLock
    ProjectLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    time.sleep(60)
""")


def test_a_dead_holders_lock_is_taken_over_and_a_live_one_never(tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert ProjectLock(path).owner() == {"host": os.uname().nodename, "pid": holder.pid, "purpose": "open"}
        assert ProjectLock(path).remove_if_stale() is False
        with pytest.raises(ProjectLockedError, match=f"process {holder.pid}"):
            ProjectLock(path).acquire(wait_s=0.2)  # a window holding it is reported at once
    finally:
        holder.kill()
        holder.wait()
    assert ProjectLock(path).path.exists() and ProjectLock(path).owner() is None
    lock = ProjectLock(path)
    lock.acquire(purpose=WRITE)
    assert json.loads(lock.path.read_text()) == {"host": os.uname().nodename, "pid": os.getpid(), "purpose": WRITE}
    lock.release()
    assert not lock.path.exists()


def test_a_stale_lock_file_is_removed_only_when_stale(tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    ProjectLock(path).path.write_text("not json")  # a crash while the file was written
    assert ProjectLock(path).owner() is None
    assert ProjectLock(path).remove_if_stale() and not ProjectLock(path).path.exists()


def test_without_flock_the_lock_is_still_exclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File systems without flock: O_EXCL creation, and the process id decides staleness."""
    monkeypatch.setattr(lock_module, "fcntl", None)
    path = tmp_path / "p.gpuwb"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    ProjectLock(path).path.write_text(json.dumps({"host": os.uname().nodename, "pid": int(dead.stdout)}))
    lock = ProjectLock(path)
    lock.acquire()  # the named process is gone: taken over
    assert json.loads(lock.path.read_text())["pid"] == os.getpid()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.release()
        ProjectLock(path).path.write_text(json.dumps({"host": os.uname().nodename, "pid": alive.pid}))
        with pytest.raises(ProjectLockedError, match=f"process {alive.pid}"):
            ProjectLock(path).acquire()
    finally:
        alive.kill()
        alive.wait()


def test_a_read_only_folder_gets_no_lock_but_opening_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(lock_module.os, "open", refuse)
    lock = ProjectLock(tmp_path / "p.gpuwb")
    lock.acquire()
    assert not lock.held


def test_a_fifo_in_place_of_the_lock_file_is_refused_without_hanging(tmp_path: Path) -> None:
    path = tmp_path / "p.gpuwb"
    os.mkfifo(ProjectLock(path).path)
    assert ProjectLock(path).owner() is None
    with pytest.raises(ProjectLockedError, match="is not a regular file; remove it"):
        ProjectLock(path).acquire(purpose=WRITE, wait_s=1.0)
