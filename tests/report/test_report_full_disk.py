"""A full disk never turns a good report or export into a fragment, and says so in one line.

Two ways: a real 256 KiB tmpfs filled to the brim (Linux, as root; skipped with the reason
elsewhere), and the same failures injected at ``os.fsync``/``os.write`` so that every platform
runs them. In both, the CLI exits 2 with one line, the old file keeps its bytes and no temporary
file is left.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.core import atomic_write
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.store import save_project

REPORT = ("report", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--sections", "cover,summary,memory")
CSV = ("compare", "--model", "llama-3.1-8b", "--gpus-list", "h100-sxm,a100-80gb-sxm", "--csv")
DISK = 256 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A freshly mounted 256 KiB tmpfs, unmounted afterwards."""
    if not sys.platform.startswith("linux"):
        pytest.skip("a tmpfs mount needs Linux")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("mount/umount are not installed")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK // 1024}k", "tmpfs", str(mount_point)],
        capture_output=True, text=True, timeout=20, check=False,
    )
    if done.returncode:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], capture_output=True, timeout=20, check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Take all but about ``leave`` bytes of the disk with a filler file."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    filler = disk / "filler"
    with filler.open("wb") as fh:
        fh.write(bytes(max(0, free - leave)))
    return filler


def _only(folder: Path, *names: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)  # no *.part left behind


@pytest.fixture(scope="module")
def good_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    pdf = tmp_path_factory.mktemp("good") / "r.pdf"
    from workbench.cli import main

    assert main([*REPORT, "-o", str(pdf)]) == 0
    return pdf.read_bytes()


def test_report_on_a_full_tmpfs_keeps_the_old_pdf(  # type: ignore[no-untyped-def]
    qapp, small_disk: Path, good_report: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    target = small_disk / "r.pdf"
    target.write_bytes(good_report)
    filler = _fill(small_disk, leave=8 * 1024)  # far less than the report needs
    code, out, err = run_cli(capsys, *REPORT, "-o", str(target))
    assert_one_line_error(code, out, err, str(target), "the disk is full", "the existing file is unchanged")
    assert target.read_bytes() == good_report
    _only(small_disk, "r.pdf", "filler")
    # With room to spare the same command writes the report: the disk was the problem.
    filler.unlink()
    assert run_cli(capsys, *REPORT, "-o", str(target))[0] == 0
    assert target.read_bytes().startswith(b"%PDF-") and target.read_bytes().rstrip().endswith(b"%%EOF")


def test_csv_export_on_a_full_tmpfs_keeps_the_old_file(
    small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = small_disk / "c.csv"
    target.write_bytes(b"old,export\n1,2\n")
    _fill(small_disk, leave=0)
    code, _out, err = run_cli(capsys, *CSV, str(target))
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"gpu-workbench: error: {target}: cannot write the CSV export")
    assert "the disk is full" in err and len(err.strip().splitlines()) == 1
    assert target.read_bytes() == b"old,export\n1,2\n"
    _only(small_disk, "c.csv", "filler")


def _enospc_on(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``os.<name>`` fails with ENOSPC (a write first lets half its bytes through, as a disk filling up)."""
    real = getattr(os, name)
    calls = [0]

    def fake(*args: object) -> object:
        calls[0] += 1
        if name == "write" and calls[0] == 1:
            data = bytes(args[1])  # type: ignore[arg-type]
            return real(args[0], data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_write.os, name, fake)


def test_report_with_enospc_keeps_the_old_pdf(  # type: ignore[no-untyped-def]
    qapp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, good_report: bytes,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = tmp_path / "r.pdf"
    target.write_bytes(good_report)
    _enospc_on(monkeypatch, "fsync")
    code, out, err = run_cli(capsys, *REPORT, "-o", str(target))
    monkeypatch.undo()
    assert_one_line_error(code, out, err, "cannot write the report (the disk is full)", "unchanged")
    assert "wrote" not in out
    assert target.read_bytes() == good_report
    _only(tmp_path, "r.pdf")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ((*CSV, "{target}"), "cannot write the CSV export (the disk is full)"),
        (("compare", "--model", "llama-3.1-8b", "--gpus-list", "h100-sxm", "--html", "{target}"),
         "cannot write the HTML export (the disk is full)"),
        (("project", "export", "{project}", "-o", "{target}"), "cannot write the export (the disk is full)"),
        (("project", "export", "{project}", "--scenario", "serve", "-o", "{target}"), "the disk is full"),
    ],
)
def test_exports_with_enospc_keep_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...], needle: str,
) -> None:
    project = tmp_path / "plan.gpuwb"
    save_project(Project(name="p", scenarios=(Scenario(name="serve", model="llama-3.1-8b", gpu="h100-sxm"),)),
                 project)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "export.txt"
    target.write_bytes(b"the old export\n")
    args = [a.format(target=target, project=project) for a in argv]
    _enospc_on(monkeypatch, "write")
    code, _out, err = run_cli(capsys, *args)
    monkeypatch.undo()
    assert code == 2 and needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert target.read_bytes() == b"the old export\n"
    _only(out_dir, "export.txt")
    assert run_cli(capsys, *args)[0] == 0 and target.read_bytes() != b"the old export\n"


@pytest.mark.parametrize(
    "argv",
    [
        (*CSV, "{missing}/c.csv"),
        ("project", "export", "{project}", "-o", "{missing}/p.json"),
        (*REPORT, "-o", "{missing}/r.pdf"),
    ],
)
def test_export_to_a_missing_folder_is_one_line(  # type: ignore[no-untyped-def]
    qapp, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    project = tmp_path / "plan.gpuwb"
    save_project(Project(name="p", scenarios=(Scenario(name="s", model="llama-3.1-8b", gpu="h100-sxm"),)),
                 project)
    args = [a.format(missing=tmp_path / "nope", project=project) for a in argv]
    assert_one_line_error(*run_cli(capsys, *args), "nope", "does not exist")
    assert not (tmp_path / "nope").exists()
