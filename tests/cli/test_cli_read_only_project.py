"""Project commands on a read-only folder: reading commands work, writing ones say why in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from read_only import read_only_view
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.core import Project, Scenario
from workbench.store import save_project


def test_read_only_project_reads_and_refuses_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    save_project(Project(name="Shared", scenarios=(Scenario(name="serve", model="llama-3.1-8b", gpu="h100-sxm",
                                                            batch_size=8),)), folder / "plan.gpuwb")
    with read_only_view(folder) as view:
        path = view / "plan.gpuwb"
        before = {p.name: p.read_bytes() for p in view.iterdir()}
        code, out, err = run_cli(capsys, "project", "list", str(path), "--json")
        assert code == 0, err
        assert [s["name"] for s in json.loads(out)["scenarios"]] == ["serve"]
        code, out, err = run_cli(capsys, "project", "export", str(path))
        assert code == 0 and json.loads(out)["name"] == "Shared", err
        code, out, err = run_cli(capsys, "estimate", "--project", str(path), "--scenario", "serve", "--json")
        assert code == 0 and json.loads(out)["scenario"]["batch_size"] == 8, err
        assert_one_line_error(*run_cli(capsys, "project", "add-scenario", str(path), "--name", "more", "--model",
                                       "llama-3.1-8b", "--gpu", "h100-sxm"),
                              f"cannot save project {path}: the file is read-only")
        assert_one_line_error(*run_cli(capsys, "project", "new", str(view / "new.gpuwb")),
                              f"the folder {view} is read-only")
        assert {p.name: p.read_bytes() for p in view.iterdir()} == before
