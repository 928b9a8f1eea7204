"""File → Export Report… on a full disk: the dialog shows the one-line reason, the old PDF stays."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workbench.core import atomic_write
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.gui.dialogs.report_dialog import ReportDialog


def test_a_full_disk_is_reported_and_the_old_pdf_kept(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = Project(name="Plan", scenarios=(Scenario(name="serve", model="llama-3.1-8b", gpu="h100-sxm"),))
    dialog = ReportDialog(plan, default_folder=tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    target = tmp_path / "plan.pdf"
    old = b"%PDF-1.7\nthe report from last week\n%%EOF\n"
    target.write_bytes(old)
    dialog.path_edit.setText(str(target))
    dialog.set_sections({"cover"})

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_write.os, "fsync", full)
    dialog.start()
    qtbot.waitUntil(lambda: not dialog.running, timeout=60000)
    monkeypatch.undo()
    assert "the disk is full" in dialog.last_error and "existing file is unchanged" in dialog.last_error
    assert "Cannot write the report" in dialog.status.text()
    assert target.read_bytes() == old
    assert [p.name for p in tmp_path.iterdir()] == ["plan.pdf"]
