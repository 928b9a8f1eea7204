"""`gpu-workbench export`: formats, mistakes, files written, and the README's quoted export."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench_export import ALL

ROOT = Path(__file__).resolve().parents[2]
SERVING = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "8"]
TRAINING = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "8", "--workload", "finetune", "--zero", "3"]


def test_list_names_every_format_with_its_engine_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "export", "--to", "list")
    assert code == 0 and err == ""
    for exporter in ALL:
        line = next(line for line in out.splitlines() if line.startswith(exporter.info.id + " "))
        assert f"{exporter.info.engine} {exporter.info.engine_version}" in line


def test_an_unknown_format_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "export", "--to", "vllm-serve", *SERVING)
    assert_one_line_error(code, out, err, "unknown export format 'vllm-serve'", "vllm, sglang")


def test_a_training_format_for_a_serving_scenario_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "export", "--to", "deepspeed", *SERVING)
    assert_one_line_error(code, out, err, "export deepspeed", "finetune, pretrain", "inference")


def test_a_serving_format_for_a_training_scenario_is_one_line(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    code, out, err = run_cli(capsys, "export", "--to", "kubernetes", *TRAINING, "-o", str(tmp_path / "k.yaml"))
    assert_one_line_error(code, out, err, "export kubernetes", "finetune")
    assert not (tmp_path / "k.yaml").exists()


def test_one_file_is_written_where_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "job.json"  # any name: the TOML is still written (and checked) as TOML
    code, out, err = run_cli(capsys, "export", "--to", "deepspeed", *TRAINING, "-o", str(tmp_path / "ds"))
    assert code == 0, err
    assert json.loads((tmp_path / "ds" / "ds_config.json").read_text())["zero_optimization"]["stage"] == 3
    assert "seq_len=2048" in (tmp_path / "ds" / "ds_config.notes.txt").read_text()
    code, out, err = run_cli(capsys, "export", "--to", "torchtitan", *TRAINING, "-o", str(target))
    assert code == 0 and out == "" and err.strip() == f"wrote {target}"
    assert "data_parallel_shard_degree = 8" in target.read_text()


def test_several_files_need_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    taken = tmp_path / "serve.txt"
    taken.write_text("keep")
    code, out, err = run_cli(capsys, "export", "--to", "vllm", *SERVING, "-o", str(taken))
    assert_one_line_error(code, out, err, "give a folder")
    assert taken.read_text() == "keep"
    code, out, err = run_cli(capsys, "export", "--to", "vllm", *SERVING, "-o", str(tmp_path / "launch"))
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "launch").iterdir()) == ["bench.sh", "serve.sh"]


def test_the_readme_quotes_a_real_export_word_for_word(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Export a launch configuration", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    command, quoted = block.split("\n", 1)
    assert command.startswith("$ gpu-workbench export ")
    code, out, err = run_cli(capsys, *shlex.split(command)[2:])
    assert code == 0, err
    assert out == quoted


def test_a_projects_scenario_exports_with_its_saved_engine(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    project = tmp_path / "plan.gpuwb"
    assert run_cli(capsys, "project", "new", str(project))[0] == 0
    code, _, err = run_cli(capsys, "project", "add-scenario", str(project), "--name", "chat", *SERVING,
                           "--engine", "sglang", "--max-running", "4")
    assert code == 0, err
    code, out, err = run_cli(capsys, "export", "--to", "sglang", "--project", str(project), "--scenario", "chat")
    assert code == 0, err
    assert "scenario 'chat'" in out and "--max-running-requests 4 " in out.replace("\\\n", "")
