"""Headless project workflow: new, add-scenario, list, export/import, estimate from a project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.store import open_project


def test_project_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "q3.gpuwb"
    assert run_cli(capsys, "project", "new", str(path), "--name", "Q3")[0] == 0
    code, _, err = run_cli(capsys, "project", "add-scenario", str(path), "--name", "serve-8b",
                           "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "32")
    assert code == 0, err
    assert run_cli(capsys, "project", "add-scenario", str(path), "--name", "train-70b", "--model", "llama-3.1-70b",
                   "--gpu", "h100-sxm", "--gpus", "64", "--workload", "pretrain", "--zero", "3")[0] == 0
    code, out, _ = run_cli(capsys, "project", "list", str(path), "--json")
    listing = json.loads(out)
    assert [s["name"] for s in listing["scenarios"]] == ["serve-8b", "train-70b"]
    assert listing["scenarios"][1]["num_gpus"] == 64

    project = open_project(path)
    assert project.scenario("serve-8b").batch_size == 32
    assert project.scenario("train-70b").parallel.dp == 64

    code, out, err = run_cli(capsys, "estimate", "--project", str(path), "--scenario", "serve-8b", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["scenario"]["batch_size"] == 32
    assert doc["parameters"]["total"] > 8e9

    exported = tmp_path / "s.json"
    assert run_cli(capsys, "project", "export", str(path), "--scenario", "serve-8b", "-o", str(exported))[0] == 0
    other = tmp_path / "other.gpuwb"
    run_cli(capsys, "project", "new", str(other))
    assert run_cli(capsys, "project", "import", str(other), str(exported))[0] == 0
    assert open_project(other).scenario("serve-8b") == project.scenario("serve-8b")

    whole = tmp_path / "p.json"
    run_cli(capsys, "project", "export", str(path), "-o", str(whole))
    copy = tmp_path / "copy.gpuwb"
    assert run_cli(capsys, "project", "import", str(copy), str(whole))[0] == 0
    assert open_project(copy).scenarios == project.scenarios


def test_project_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "q3.gpuwb"
    run_cli(capsys, "project", "new", str(path))
    before = path.read_bytes()
    assert_one_line_error(*run_cli(capsys, "project", "new", str(path)), "already exists")
    assert_one_line_error(*run_cli(capsys, "project", "add-scenario", str(path), "--model", "llama-3.1-8b",
                                   "--gpu", "nope-gpu"), "nope-gpu")
    assert_one_line_error(*run_cli(capsys, "estimate", "--project", str(path), "--scenario", "ghost"), "ghost")
    assert path.read_bytes() == before
    junk = tmp_path / "junk.gpuwb"
    junk.write_bytes(b"\x00" * 300)
    assert_one_line_error(*run_cli(capsys, "project", "list", str(junk)), "not a workbench project")
    assert junk.read_bytes() == b"\x00" * 300
