"""Keep two writers of one project apart, and tell a user who holds it.

A lock file ``<project>.lock`` beside the project names its holder (host, process id, and
whether it has the project *open* in a window or is *writing* it from the command line). The
holder keeps an exclusive ``flock`` on that file for as long as it holds the lock, so:

* taking the lock is one atomic kernel operation: of two processes that try at the same moment,
  exactly one gets it (a check-then-write of the file's contents cannot promise that);
* a holder that dies (crash, ``kill -9``) drops the kernel lock at once; its file is stale and
  the next taker reuses it *under the kernel lock*, so two processes can never both take over.

Where the file system has no ``flock`` (rare: some network shares), the file is created with
``O_CREAT | O_EXCL`` and a stale one is recognised by its dead process id (best effort). In a
read-only folder no lock file can exist: opening still works, and saving there fails anyway.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.core.errors import InputError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

#: The window holds ``OPEN`` while a project is open; CLI commands hold ``WRITE`` for one edit.
OPEN, WRITE = "open", "write"

# Locks this process holds: absolute lock path -> file descriptor carrying the kernel lock. Kept
# here (not on the ProjectLock object) so that a lock lives until release(), not until the
# object is garbage collected, and so that one process re-opening its own project is not refused.
_HELD: dict[str, int] = {}
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class ProjectLockedError(InputError):
    """Another running instance holds the project."""


class _NoFlock(Exception):
    """The file system does not support flock."""


class _Busy(Exception):
    def __init__(self, owner: dict[str, object]) -> None:
        self.owner = owner


def lock_path(project_path: str | Path) -> Path:
    path = Path(project_path)
    return path.with_name(path.name + ".lock")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError, OSError):
        return False
    return True


class ProjectLock:
    """Hold the lock while a project is open (or written) in this process; ``release()`` after."""

    def __init__(self, project_path: str | Path) -> None:
        self.path = lock_path(project_path)
        self.held = False
        self._taker = False  # this object took the file (and releases it)
        self._key = os.path.abspath(self.path)

    # --- who holds it ------------------------------------------------------------------------

    def _contents(self, settle_s: float = 0.05) -> dict[str, object] | None:
        """The holder named in the file; a taker writes it just after locking, so re-read briefly."""
        deadline = time.monotonic() + settle_s
        while True:
            try:
                data = json.loads(self._read())
                return {"host": str(data["host"]), "pid": int(data["pid"]), "purpose": str(data.get("purpose", OPEN))}
            except FileNotFoundError:
                return None
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                if time.monotonic() >= deadline:
                    return {"host": "?", "pid": None, "purpose": None}  # being written this moment
                time.sleep(0.005)

    def _read(self) -> bytes:
        """The file's few bytes; never blocks (a FIFO in its place) and never reads much."""
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError("not a regular file")
            return os.read(fd, 4096)
        finally:
            os.close(fd)

    def owner(self) -> dict[str, object] | None:
        """The live holder of the lock (another process), or None when it is free, stale or ours."""
        if self._key in _HELD:
            return None
        contents = self._contents()
        if contents is None:
            return None
        if contents["pid"] == os.getpid() and contents["host"] == socket.gethostname():
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return contents
                except OSError as exc:
                    if exc.errno not in _NO_FLOCK:
                        raise
                else:
                    return contents if self._named_process_runs_here(contents) else None
            return contents if self._pid_says_alive(contents) else None
        finally:
            os.close(fd)

    @staticmethod
    def _named_process_runs_here(contents: dict[str, object]) -> bool:
        """Nobody holds the kernel lock, but the file names a running process on this host: a
        workbench that predates kernel locks (or a hand-made lock). Respect it, as before."""
        pid = contents.get("pid")
        return (isinstance(pid, int) and pid != os.getpid() and contents.get("host") == socket.gethostname()
                and _alive(pid))

    @staticmethod
    def _pid_says_alive(contents: dict[str, object]) -> bool:
        pid = contents.get("pid")
        if not isinstance(pid, int):
            return True
        return contents.get("host") != socket.gethostname() or _alive(pid)

    # --- taking and giving back --------------------------------------------------------------

    def acquire(self, purpose: str = OPEN, wait_s: float = 0.0) -> None:
        """Take the lock, or raise :class:`ProjectLockedError` naming the holder.

        A holder that is *writing* (a command-line edit, a fraction of a second) is waited for up
        to ``wait_s``; a window that has the project open is reported at once.
        """
        if self._key in _HELD:
            # This process has it already (the window re-opening its own file): shared, and the
            # lock that took the file is the one that gives it back.
            self.held = True
            return
        deadline = time.monotonic() + wait_s
        payload = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "purpose": purpose}).encode()
        while True:
            try:
                fd = self._take(payload)
            except _Busy as busy:
                if busy.owner.get("pid") == os.getpid() and busy.owner.get("host") == socket.gethostname():
                    self.held = True  # ours, reached by another path (a link): shared, as above
                    return
                if busy.owner.get("purpose") in (WRITE, None) and time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                raise ProjectLockedError(self._message(busy.owner)) from None
            except OSError:
                return  # read-only folder: opening still works, the lock is best effort
            _HELD[self._key] = fd
            self.held = self._taker = True
            return

    def _message(self, owner: dict[str, object]) -> str:
        project = self.path.with_suffix("")
        pid = owner.get("pid") or "unknown"
        if owner.get("purpose") is None:
            return f"{project}: project is in use by another process; try again"
        if owner.get("purpose") == WRITE:
            return f"{project}: project is being written by another process (pid {pid}); try again"
        return (f"{project}: already open in another workbench (process {pid} on {owner.get('host')}); "
                "close it there first, or open a copy")

    def _take(self, payload: bytes) -> int:
        if fcntl is None:
            return self._take_exclusive(payload)
        for _ in range(50):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
                         | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                taken = self._lock_fd(fd, payload)
            except _NoFlock:
                os.close(fd)
                return self._take_exclusive(payload)
            except BaseException:
                os.close(fd)
                raise
            if taken:
                return fd
            os.close(fd)  # a releaser unlinked the file between our open and our lock: retry
        raise _Busy({"host": "?", "pid": None, "purpose": None})  # the file keeps changing

    def _lock_fd(self, fd: int, payload: bytes) -> bool:
        """Lock the open lock file and name us in it; False if it is no longer the file at the path."""
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ProjectLockedError(f"{self.path}: is not a regular file; remove it to use the project")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            contents = self._contents()
            if contents is None:
                return False  # released (and removed) just now: try again
            raise _Busy(contents) from None
        except OSError as exc:
            if exc.errno in _NO_FLOCK:
                raise _NoFlock from None
            raise
        if not self._is_current(fd):
            return False
        contents = self._contents(settle_s=0)
        if contents is not None and self._named_process_runs_here(contents):
            raise _Busy(contents)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, payload, 0)
        except OSError:
            pass  # a full disk: the kernel lock holds all the same; only the holder's name is missing
        return True

    def _is_current(self, fd: int) -> bool:
        """The file we locked is still the one at the path (not one a releaser just unlinked)."""
        try:
            here, there = os.fstat(fd), os.stat(self.path)
        except FileNotFoundError:
            return False
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)

    def _take_exclusive(self, payload: bytes) -> int:
        """Without flock: create the file exclusively; remove a dead holder's file and retry."""
        for _ in range(10):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                contents = self._contents()
                if contents is not None and self._pid_says_alive(contents):
                    raise _Busy(contents) from None
                self.path.unlink(missing_ok=True)
                continue
            try:
                os.write(fd, payload)
            except OSError:  # without flock an unnamed file would look held forever
                os.close(fd)
                self.path.unlink(missing_ok=True)
                raise
            return fd
        raise _Busy({"host": "?", "pid": None, "purpose": None})  # the file keeps changing

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        if not self._taker:
            return
        self._taker = False
        fd = _HELD.pop(self._key, None)
        if fd is None:
            return
        try:
            if self._is_current(fd):
                self.path.unlink(missing_ok=True)  # still under our kernel lock: nobody else has it
        except OSError:
            pass
        finally:
            os.close(fd)

    def remove_if_stale(self) -> bool:
        """Delete the lock file a dead holder left (under the kernel lock); True if it is gone."""
        if self._key in _HELD:
            return False
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False
                except OSError as exc:
                    if exc.errno not in _NO_FLOCK:
                        return False
                    if self.owner() is not None:
                        return False
            elif self.owner() is not None:
                return False
            contents = self._contents(settle_s=0)
            if contents is not None and self._named_process_runs_here(contents):
                return False
            if self._is_current(fd):
                self.path.unlink(missing_ok=True)
            return True
        finally:
            os.close(fd)


@contextmanager
def writing(project_path: str | Path, wait_s: float = 10.0) -> Iterator[None]:
    """Hold the project's lock for a whole read-modify-write, so two writers never lose an edit.

    Waits up to ``wait_s`` for another writer (an edit takes a fraction of a second); a window
    that has the project open is reported at once (:class:`ProjectLockedError`).
    """
    lock = ProjectLock(project_path)
    lock.acquire(purpose=WRITE, wait_s=wait_s)
    try:
        yield
    finally:
        lock.release()
