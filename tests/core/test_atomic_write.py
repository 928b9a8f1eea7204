"""Output files are complete or untouched: every failure leaves the old bytes and no temporary file.

The failures are injected where the operating system reports them (``os.write``, ``os.fsync``,
``os.open``, ``os.replace``), so these run on every platform; the real full disk is in
tests/report/test_report_full_disk.py.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.core import atomic_write
from workbench.core.atomic_write import (
    OutputError,
    verify_json,
    verify_pdf,
    write_bytes,
    write_text,
    write_with,
)

OLD = b"%PDF-1.4 the good old report %%EOF\n"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "out" / "r.pdf"
    path.parent.mkdir()
    path.write_bytes(OLD)
    return path


def _assert_untouched(target: Path) -> None:
    assert target.read_bytes() == OLD
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temporary file left


def _fail_on_part_files(real: Callable[..., object], err: int, after: int = 0) -> Callable[..., object]:
    """Wrap an os function so that it fails with ``err`` on our temporary file after ``after`` calls.

    Calls by descriptor (write, fsync) are all ours: nothing else runs while the helper does.
    A write that is let through writes only its first 4 KiB, as a filling disk does.
    """
    calls = [0]
    partial = real is os.write

    def fake(*args: object) -> object:
        first = args[0]
        if isinstance(first, str | os.PathLike) and not os.fspath(first).endswith(".part"):
            return real(*args)
        calls[0] += 1
        if calls[0] > after:
            raise OSError(err, os.strerror(err))
        if partial:
            return real(first, bytes(args[1])[:4096])  # type: ignore[arg-type]
        return real(*args)

    return fake


def test_writes_and_replaces(target: Path) -> None:
    write_text(target, '{"a": 1}\n', verify=verify_json)
    assert target.read_text() == '{"a": 1}\n'
    write_bytes(target.parent / "new.bin", b"\x00\x01")
    assert (target.parent / "new.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["new.bin", "r.pdf"]


def test_keeps_the_mode_of_the_file_it_replaces_and_the_umask_for_new_ones(target: Path) -> None:
    target.chmod(0o640)
    write_text(target, "x")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        write_text(target.parent / "fresh.txt", "y")
    finally:
        os.umask(old)
    assert stat.S_IMODE((target.parent / "fresh.txt").stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("function", "err", "after", "needle"),
    [
        ("write", errno.ENOSPC, 1, "the disk is full"),
        ("fsync", errno.ENOSPC, 0, "the disk is full"),
        ("fsync", errno.EIO, 0, os.strerror(errno.EIO)),
        ("open", errno.EROFS, 0, "the file system is read-only"),
        ("open", errno.EACCES, 0, os.strerror(errno.EACCES)),
        ("replace", errno.EXDEV, 0, os.strerror(errno.EXDEV)),
    ],
)
def test_an_os_error_leaves_the_old_file(
    monkeypatch: pytest.MonkeyPatch, target: Path, function: str, err: int, after: int, needle: str
) -> None:
    monkeypatch.setattr(atomic_write.os, function, _fail_on_part_files(getattr(os, function), err, after))
    big = b"%PDF-" + bytes(1 << 20) + b"%%EOF"
    with pytest.raises(OutputError) as info:
        write_bytes(target, big, verify=verify_pdf, what="the report")
    monkeypatch.undo()
    message = str(info.value)
    assert message.startswith(f"{target}: cannot write the report (")
    assert needle in message and message.endswith("the existing file is unchanged")
    assert "\n" not in message
    _assert_untouched(target)


def test_a_writer_that_reports_nothing_is_caught_by_the_check(target: Path) -> None:
    """QPdfWriter on a full disk: a short file and no error. The %%EOF check refuses it."""

    def short_pdf(path: Path) -> int:
        path.write_bytes(b"%PDF-1.4\n" + bytes(4096))
        return 3

    with pytest.raises(OutputError, match="was not written completely: the PDF is cut short") as info:
        write_with(target, short_pdf, verify=verify_pdf, what="the report")
    assert str(info.value).endswith("the existing file is unchanged")
    _assert_untouched(target)
    good = b"%PDF-1.7\n...\n%%EOF\n"
    assert write_with(target, lambda p: p.write_bytes(good) and 5, verify=verify_pdf) == 5


@pytest.mark.parametrize(
    ("content", "verify", "needle"),
    [
        (b"", None, "0 of 0 bytes"),
        (b'{"a": ', verify_json, "not valid JSON"),
        (b"\xff", verify_json, "not valid JSON"),
        (b"<html>", verify_pdf, "does not start like a PDF"),
    ],
)
def test_empty_or_damaged_output_is_refused(
    target: Path, content: bytes, verify: object, needle: str
) -> None:
    with pytest.raises(OutputError, match=needle):
        write_bytes(target, content, verify=verify)  # type: ignore[arg-type]
    _assert_untouched(target)


def test_a_failing_producer_leaves_no_temporary_file(target: Path) -> None:
    def boom(path: Path) -> None:
        path.write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_with(target, boom)
    _assert_untouched(target)


def test_a_link_is_written_through_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "shared" / "r.csv"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "r.csv"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in real.parent.iterdir()) == ["r.csv"]


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_device_is_never_replaced(tmp_path: Path) -> None:
    """As root, os.replace onto /dev/null would swap the device for a file."""
    with pytest.raises(OutputError, match="not a regular file"):
        write_text("/dev/null", "x")
    assert Path("/dev/null").is_char_device()


def test_missing_folder_and_folder_target(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="folder .*nope does not exist"):
        write_text(tmp_path / "nope" / "x.csv", "a")
    with pytest.raises(OutputError, match="is a folder"):
        write_text(tmp_path, "a")
    assert list(tmp_path.iterdir()) == []


def test_nothing_written_is_said_when_there_was_no_old_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(atomic_write.os, "fsync", _fail_on_part_files(os.fsync, errno.ENOSPC))
    with pytest.raises(OutputError, match="nothing was written$"):
        write_text(tmp_path / "x.csv", "a,b\n")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_read_only_file_and_folder(target: Path) -> None:
    target.chmod(0o444)
    with pytest.raises(OutputError, match="read-only"):
        write_text(target, "new")
    target.chmod(0o644)
    target.parent.chmod(0o555)
    try:
        with pytest.raises(OutputError, match=os.strerror(errno.EACCES)):
            write_text(target, "new")
    finally:
        target.parent.chmod(0o755)
    _assert_untouched(target)
