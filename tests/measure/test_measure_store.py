"""Measurements live in the project file: imported all or nothing, kept by every save, and a
damaged row never stops the project from opening."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from project_factory import sample_project  # tests/store, on the test path (pyproject)
from test_cli_bad_input import assert_one_line_error, run_cli  # tests/cli

from workbench.measure.stored import load_measurements
from workbench.store import open_project, save_project
from workbench.store.measurements import read_rows

DATA = Path(__file__).parents[1] / "data" / "measurements"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "p.gpuwb"
    save_project(sample_project(2), path)
    return path


def _import(capsys: pytest.CaptureFixture[str], project: Path, file: Path, *flags: str) -> tuple[int, str, str]:
    return run_cli(capsys, "measure", "import", str(file), "--project", str(project), *flags)


def test_import_ties_measurements_to_a_project_scenario(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _import(capsys, project, DATA / "sglang_bench_serving.jsonl", "--scenario", "scenario 0")
    assert code == 0, err
    assert "imported 2 measurements" in out and "scenario 'scenario 0'" in out
    found, skipped = load_measurements(project)
    assert skipped == [] and [m.id for m in found] == [1, 2]
    assert {m.scenario_name for m in found} == {"scenario 0"}
    assert [m.scenario.batch_size for m in found] == [16, 64]  # what the file ran, on the scenario's model/GPU
    assert all(m.scenario.serving.engine.value == "sglang" and m.scenario.seq_len == 1024 for m in found)


def test_a_new_scenario_is_built_from_the_file_and_flags(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _import(capsys, project, DATA / "aiperf_profile_export.json", "--scenario", "aiperf run")
    assert code == 0, err
    scenario = open_project(project).scenario("aiperf run")
    # model from the file's HF id, GPU from its telemetry, lengths and concurrency from its figures
    assert (scenario.model, scenario.gpu, scenario.seq_len, scenario.gen_len, scenario.batch_size) == (
        "llama-3.1-8b", "h100-sxm", 2048, 512, 32)


def test_nothing_is_half_imported(project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = project.read_bytes()
    bad = tmp_path / "runs.csv"
    bad.write_text("model,gpu,output_tokens_per_s\nllama-3.1-8b,h100-sxm,1000\nllama-3.1-8b,b200,2000\n")
    code, out, err = _import(capsys, project, bad, "--scenario", "scenario 0")
    assert_one_line_error(code, out, err, "runs.csv line 3", "measured on b200", "uses h100-sxm")
    assert project.read_bytes() == before
    assert read_rows(project, "measurements") == []


def test_gpu_not_in_catalog_and_missing_project(project: Path, capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    bad = tmp_path / "runs.csv"
    bad.write_text("gpu,output_tokens_per_s\nAcme Tensor 9000,1000\n")
    assert_one_line_error(*_import(capsys, project, bad, "--scenario", "scenario 0"),
                          "GPU 'Acme Tensor 9000' is not in the catalog")
    assert_one_line_error(*run_cli(capsys, "measure", "import", str(DATA / "measurements.csv")), "--project FILE")
    assert_one_line_error(*_import(capsys, project, DATA / "sglang_bench_serving.jsonl"), "--model")


def test_every_save_keeps_the_measurements(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(capsys, project, DATA / "measurements.csv", "--scenario", "scenario 0")[0] == 0
    # the window saves the Project model only: the rows it knows nothing of must survive
    edited = open_project(project).model_copy(update={"notes": "edited in the window"})
    save_project(edited, project)
    assert open_project(project).notes == "edited in the window"
    found, _ = load_measurements(project)
    assert [m.measurement.record for m in found] == ["line 2", "line 3"]
    code, out, _ = run_cli(capsys, "measure", "list", "--project", str(project))
    assert code == 0 and "measurements.csv line 3" in out
    code, out, err = run_cli(capsys, "measure", "remove", "1", "7", "--project", str(project))
    assert code == 0 and "removed 1 measurement" in out and "1 of the ids were not" in err
    assert [m.id for m in load_measurements(project)[0]] == [2]


def test_a_damaged_row_is_skipped_not_fatal(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _import(capsys, project, DATA / "sglang_bench_serving.jsonl", "--scenario", "scenario 0")[0] == 0
    conn = sqlite3.connect(project)
    conn.execute("UPDATE measurements SET payload_json = '{\"measurement\": 3' WHERE id = 1")
    conn.commit()
    conn.close()
    assert open_project(project).name  # the project still opens
    found, skipped = load_measurements(project)
    assert [m.id for m in found] == [2] and len(skipped) == 1 and skipped[0].startswith("measurement 1")
    code, out, err = run_cli(capsys, "measure", "list", "--project", str(project))
    assert code == 0 and "#2" in out and "skipped damaged measurement 1" in err


def test_a_format_1_file_opens_and_takes_measurements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.gpuwb"
    old.write_bytes((Path(__file__).parents[1] / "data" / "projects" / "format-v1.gpuwb").read_bytes())
    name = open_project(old).scenarios[0].name
    code, _, err = _import(capsys, old, DATA / "measurements.csv", "--scenario", name, "--model", "llama-3.1-8b",
                           "--gpu", "h100-sxm")
    assert code == 0, err
    assert len(load_measurements(old)[0]) == 2
