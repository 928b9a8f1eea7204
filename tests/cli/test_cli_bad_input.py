"""Every user mistake: one clear line on stderr, exit code 2, no traceback, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gpu-workbench")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0]


def test_malformed_config_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": 4096,')
    before = bad.read_bytes()
    assert_one_line_error(*run_cli(capsys, "import", str(bad)), "config.json")
    assert bad.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]


def test_config_missing_required_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "mystery-net", "vocab_size": 100}))
    assert_one_line_error(*run_cli(capsys, "import", str(bad)), "hidden_size")


def test_impossible_config_values_name_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({
        "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 5, "intermediate_size": 14336, "vocab_size": 128256}))
    assert_one_line_error(*run_cli(capsys, "import", str(bad)), "num_kv_heads")


def test_folder_with_no_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert_one_line_error(*run_cli(capsys, "import", str(tmp_path)), "not a model folder")


def test_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run_cli(capsys, "import", str(tmp_path / "nope")), "no such file")


def test_truncated_safetensors_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text((DATA / "configs" / "llama-3.2-1b" / "config.json").read_text())
    header = json.dumps({"w": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}}).encode()
    blob = len(header).to_bytes(8, "little") + header[: len(header) // 2]
    (folder / "model.safetensors").write_bytes(blob)
    assert_one_line_error(*run_cli(capsys, "import", str(folder)), "model.safetensors")
    assert (folder / "model.safetensors").read_bytes() == blob


def test_unknown_gpu_id_suggests_a_near_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run_cli(capsys, "scenario", "--model", "llama-3.1-8b", "--gpu", "h100-sxn"),
                          "h100-sxn", "h100-sxm")


def test_unknown_model_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run_cli(capsys, "scenario", "--model", "llama-9-1t", "--gpu", "h100-sxm"), "llama-9-1t")


@pytest.mark.parametrize("argv, needle", [
    (["--batch", "-4"], "batch"),
    (["--batch", "four"], "--batch"),
    (["--tp", "0"], "tp"),
    (["--dtype", "bf17"], "--dtype"),
    (["--gpus", "4", "--tp", "8"], "GPUs"),
    (["--set", "nonsense"], "--set"),
])
def test_bad_scenario_flags(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    assert_one_line_error(*run_cli(capsys, "scenario", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *argv), needle)


def test_bad_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("model: llama-3.1-8b\nbatch_size: [oops\n")
    assert_one_line_error(*run_cli(capsys, "scenario", "--scenario", str(scenario)), "s.yaml")
    scenario.write_text("- just\n- a list\n")
    assert_one_line_error(*run_cli(capsys, "scenario", "--scenario", str(scenario)), "one object")


def test_unknown_subcommand_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_error(*run_cli(capsys, "frobnicate"))


def test_real_entry_point_exit_code() -> None:
    """The installed console script, not just main(): exit 2 and a single line."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-m", "workbench", "estimate", "--model", "llama-3.1-8b",
                             "--gpu", "no-such-gpu"], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "no-such-gpu" in result.stderr
