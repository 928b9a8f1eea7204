"""Write an output file so that it is either complete or not there: never a fragment.

Every file the workbench writes for the user (PDF report, CSV/JSON/HTML exports, exported
projects and scenarios) goes through here: the content is written to a temporary file in the
same folder, flushed to disk with ``fsync``, checked (not empty, the size that was written, and a
format check such as "ends with ``%%EOF``" for a PDF or "parses" for JSON), and only then moved
over the target with ``os.replace``, which is atomic on one file system. On any failure (full
disk, read-only file system, no permission, missing folder) the target keeps its old bytes, the
temporary file is removed, and one :class:`OutputError` line says what happened.

Some writers (Qt's ``QPdfWriter``) report no write error at all: on a full disk they leave a
truncated file and say nothing. The format check is what catches those.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from workbench.core.errors import InputError

T = TypeVar("T")
#: Raised by a verifier when the written file is not what it should be (the text says why).
Verifier = Callable[[Path], None]


class OutputError(InputError):
    """An output file could not be written; the old file, if any, is unchanged. CLI exit 2."""


class IncompleteOutput(ValueError):
    """Raised by a verifier: the temporary file is damaged or incomplete."""


def verify_pdf(path: Path) -> None:
    """A PDF starts with ``%PDF-`` and its last ``%%EOF`` marker sits at the end."""
    with path.open("rb") as fh:
        head = fh.read(5)
        fh.seek(max(0, path.stat().st_size - 1024))
        tail = fh.read()
    if head != b"%PDF-":
        raise IncompleteOutput("it does not start like a PDF")
    if not tail.rstrip().endswith(b"%%EOF"):
        raise IncompleteOutput("the PDF is cut short (no %%EOF at its end)")


def verify_json(path: Path) -> None:
    """The file parses as JSON (UTF-8)."""
    try:
        json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise IncompleteOutput(f"it is not valid JSON: {exc}") from None


def write_text(
    path: str | Path, text: str, *, verify: Verifier | None = None, what: str = "the file"
) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically; see the module docstring."""
    write_bytes(path, text.encode("utf-8"), verify=verify, what=what)


def write_bytes(
    path: str | Path, data: bytes, *, verify: Verifier | None = None, what: str = "the file"
) -> None:
    """Write ``data`` to ``path`` atomically; see the module docstring."""

    def produce(fd: int, _temp: Path) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    _write(Path(path), produce, verify, what, expected=len(data))


def write_with(
    path: str | Path, produce: Callable[[Path], T], *, verify: Verifier | None = None, what: str = "the file"
) -> T:
    """Let ``produce`` write a temporary file by path (for writers that open the file themselves),
    then verify it and move it over ``path``; returns what ``produce`` returned."""
    result: list[T] = []

    def by_path(fd: int, temp: Path) -> None:
        result.append(produce(temp))

    _write(Path(path), by_path, verify, what, expected=None)
    return result[0]


def _write(
    target: Path,
    produce: Callable[[int, Path], None],
    verify: Verifier | None,
    what: str,
    expected: int | None,
) -> None:
    shown = target
    if target.is_symlink():  # write where the link points; the link itself stays
        target = Path(os.path.realpath(target))
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise OutputError(f"{shown}: is a folder; give a file name")
    if not folder.is_dir():
        raise OutputError(f"{shown}: folder {folder} does not exist")
    existed = target.exists()
    if existed and not target.is_file():  # os.replace would put a file where a device or FIFO was
        raise OutputError(f"{shown}: not a regular file; give a file name")
    if existed and not os.access(target, os.W_OK):  # replacing it would get round its protection
        raise OutputError(f"{shown}: the file exists and is read-only")
    kept = "the existing file is unchanged" if existed else "nothing was written"
    temp = folder / f".{target.name}.{secrets.token_hex(4)}.part"
    fd = -1
    try:
        # Created by hand rather than with mkstemp: mode 0o666 lets the umask decide, as for any
        # new file, and an existing target's mode is carried over below.
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(temp, flags, 0o666)
        if existed:
            os.chmod(temp, target.stat().st_mode & 0o7777)
        produce(fd, temp)
        os.fsync(fd)  # for a by-path writer this flushes what it wrote through its own handle
        size = os.fstat(fd).st_size
        os.close(fd)
        fd = -1
        if size == 0 or (expected is not None and size != expected):
            wanted = f"{expected:,}" if expected is not None else "some"
            raise IncompleteOutput(f"{size:,} of {wanted} bytes written")
        if verify is not None:
            verify(temp)
        os.replace(temp, target)
        _sync_folder(folder)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write {what} ({_reason(exc)}); {kept}") from None
    except IncompleteOutput as exc:
        full = _full(folder)
        raise OutputError(f"{shown}: {what} was not written completely: {exc}{full}; {kept}") from None
    finally:
        if fd >= 0:
            os.close(fd)
        if temp.exists():
            try:
                temp.unlink()
            except OSError:
                pass  # nothing more can be done; the name marks it as a leftover temporary file


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno == errno.EDQUOT:
        return "the disk quota is exceeded"
    return exc.strerror or str(exc)


def _full(folder: Path) -> str:
    """A hint for writers that report nothing: a disk with no room left explains a short file."""
    try:
        stats = os.statvfs(folder)
    except (OSError, AttributeError):  # statvfs does not exist on Windows
        return ""
    return "; the disk is full" if stats.f_bavail * stats.f_frsize < 64 * 1024 else ""


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX); best effort where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
