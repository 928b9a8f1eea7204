"""File-system care for project files: what may be read, temp files of saves, one-line reasons.

* A project path is read only if it is a regular file of a sane size, checked on the open file
  descriptor (opened non-blocking), so a FIFO, a device such as ``/dev/zero`` or a folder is
  refused at once instead of hanging or filling memory.
* A save writes ``.<name>.<pid>.<random>.saving`` beside the target; a save that was killed
  leaves it behind. The next open or save removes those whose writer is gone.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import sqlite3
import stat
import time
import unicodedata
from pathlib import Path

#: Larger files are refused before reading: a project holds scenarios and cached estimates, a
#: few MiB even for thousands of scenarios; this bounds the memory a stray path can take.
MAX_PROJECT_BYTES = 1 << 30
#: Temp files without a process id in their name (written by older versions) count as stale
#: once this old: no save takes that long.
_NAMELESS_STALE_S = 600.0
_TEMP_SUFFIXES = (".saving", ".saving-journal", ".saving-wal", ".saving-shm")


class Unreadable(Exception):
    """The path cannot be read as a project; ``str()`` is the reason, without the file name."""


def one_line(text: str) -> str:
    """Control characters (newlines, terminal escapes) shown escaped, so a message stays one line."""
    return "".join(
        ch if unicodedata.category(ch) != "Cc" else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular_file(path: Path, limit: int = MAX_PROJECT_BYTES) -> bytes:
    """The whole file, if it is a regular file of at most ``limit`` bytes; else :class:`Unreadable`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except OSError as exc:
        raise Unreadable(os_reason(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"is {_kind(info.st_mode)}, not a project file")
        if info.st_size > limit:
            raise Unreadable(f"{info.st_size / 2**20:,.0f} MiB is more than a project file can be "
                             f"({limit // 2**20:,} MiB)")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # the file grew while we read it
                raise Unreadable(f"more than a project file can be ({limit // 2**20:,} MiB)")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise Unreadable(os_reason(exc)) from None
    finally:
        os.close(fd)


def os_reason(exc: OSError) -> str:
    """Why a file operation failed, in words a user can act on."""
    if exc.errno == errno.ENOSPC or exc.errno == getattr(errno, "EDQUOT", None):
        return "the disk is full"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return one_line(exc.strerror or str(exc))


def sqlite_reason(exc: sqlite3.Error) -> str:
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith("SQLITE_FULL"):
        return "the disk is full"
    if name.startswith("SQLITE_READONLY"):
        return "the file system is read-only"
    if name.startswith("SQLITE_IOERR"):
        return f"input/output error ({one_line(str(exc))})"
    return one_line(str(exc))


# --- temp files of saves ------------------------------------------------------------------------


def new_temp_file(target: Path) -> Path:
    """Create (exclusively) the temp file a save of ``target`` writes; its name carries our pid."""
    directory = target.parent if str(target.parent) else Path(".")
    for _ in range(100):
        temp = directory / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.saving"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        os.close(fd)
        return temp
    raise OSError(errno.EEXIST, "cannot create a temp file")


def remove_temp_file(temp: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        try:
            os.unlink(f"{temp}{suffix}")
        except OSError:
            pass


def _writer_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # ours: a save in progress (ours are removed when they fail)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    except OSError:
        return False
    return True


def remove_stale_temp_files(target: Path) -> list[Path]:
    """Delete the temp files killed saves of ``target`` left; never those of a running save."""
    directory = target.parent if str(target.parent) else Path(".")
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(?:(\d+)\.[0-9a-f]+|[A-Za-z0-9_]+)"
                         rf"(?:{'|'.join(re.escape(s) for s in _TEMP_SUFFIXES)})$")
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if match.group(1) is not None:
                stale = not _writer_alive(int(match.group(1)))
            else:
                stale = time.time() - entry.stat(follow_symlinks=False).st_mtime > _NAMELESS_STALE_S
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue  # read-only folder, or removed by someone else meanwhile
    return removed
