"""The measure -> calibrate -> calibrated estimate loop on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from test_cli_bad_input import assert_one_line_error, run_cli

DATA = Path(__file__).parents[1] / "data" / "measurements"


@pytest.fixture
def measured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    project = tmp_path / "p.gpuwb"
    assert run_cli(capsys, "project", "new", str(project))[0] == 0
    code, _, err = run_cli(capsys, "measure", "import", str(DATA / "vllm_bench_serve.json"), "--project",
                           str(project), "--scenario", "serve-8b", "--gpu", "h100-sxm")
    assert code == 0, err
    code, _, err = run_cli(capsys, "measure", "import", str(DATA / "measurements.csv"), "--project", str(project),
                           "--scenario", "serve-8b")
    assert code == 0, err
    return project


def test_import_list_calibrate_and_apply(measured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "measure", "list", "--project", str(measured), "--json")
    listing = json.loads(out)
    assert [m["measurement"]["source_format"] for m in listing["measurements"]] == ["vllm-bench-serve", "csv", "csv"]

    shared = tmp_path / "h100-vllm.yaml"
    code, out, err = run_cli(capsys, "calibrate", "--project", str(measured), "-o", str(shared), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["gpu"] == "h100-sxm" and doc["engine"] == "vllm" and doc["measurements"] == 3
    assert doc["mark"].startswith("calibrated on 3 measurements (")
    assert doc["saved"] is True and {r["measurement"][:2] for r in doc["residuals"]} == {"#1", "#2", "#3"}
    for p in doc["parameters"]:
        assert p["low"] <= p["value"] <= p["high"]
    assert yaml.safe_load(shared.read_text())["assumptions"] == doc["assumptions"]

    # by name from the project, and from the shared file; both mark the estimate
    code, out, err = run_cli(capsys, "estimate", "--project", str(measured), "--scenario", "serve-8b",
                             "--calibration", "h100-sxm/vllm")
    assert code == 0, err
    assert out.splitlines()[0] == f"{doc['mark']} (profile 'h100-sxm/vllm')"
    code, out, err = run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
                             "--calibration", str(shared), "--json")
    assert code == 0, err
    estimate = json.loads(out)
    assert estimate["calibration"]["mark"] == doc["mark"]
    used = {a["id"]: a for a in estimate["assumptions"]}
    for ident, value in doc["assumptions"].items():
        assert used[ident]["value"] == pytest.approx(value) and used[ident]["overridden"]

    # a shared profile imported into another project
    other = tmp_path / "other.gpuwb"
    run_cli(capsys, "project", "new", str(other))
    code, out, _ = run_cli(capsys, "calibrate", "--project", str(other), "--import", str(shared))
    assert code == 0 and "added calibration 'h100-sxm/vllm'" in out


def test_import_json_names_what_was_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p.gpuwb"
    run_cli(capsys, "project", "new", str(project))
    code, out, err = run_cli(capsys, "measure", "import", str(DATA / "trtllm_bench_report.json"), "--project",
                             str(project), "--gpu", "h100-sxm", "--dtype", "fp8", "--weights", "fp8", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["added_scenario"] is True and doc["scenario"] == "measured trtllm_bench_report"
    [item] = doc["imported"]
    assert item["id"] == 1 and item["measurement"]["source_format"] == "trtllm-bench"
    assert item["scenario"]["model"] == "llama-3.1-8b" and item["scenario"]["serving"]["engine"] == "tensorrt-llm"
    assert (item["scenario"]["seq_len"], item["scenario"]["gen_len"]) == (128, 128)


def test_the_text_report_of_a_fit(measured: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "calibrate", "--project", str(measured), "--no-save")
    assert code == 0, err
    assert "calibration 'h100-sxm/vllm': 3 measurements of h100-sxm / vllm" in out
    assert "perf.kernel_efficiency_scale" in out and "median |error|: before" in out and "left out" in out
    assert "saved in" not in out


def test_calibration_mistakes_are_one_line(measured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.gpuwb"
    run_cli(capsys, "project", "new", str(empty))
    assert_one_line_error(*run_cli(capsys, "calibrate", "--project", str(empty)), "holds no measurements")
    assert_one_line_error(*run_cli(capsys, "calibrate", "--project", str(measured), "--gpu", "b200"),
                          "no measurements of b200", "h100-sxm/vllm (3)")
    shared = tmp_path / "p.yaml"
    run_cli(capsys, "calibrate", "--project", str(measured), "-o", str(shared))
    assert_one_line_error(*run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "a100-80gb-sxm",
                                   "--engine", "vllm", "--calibration", str(shared)), "fitted on h100-sxm")
    text = yaml.safe_load(shared.read_text())
    text["assumptions"] = {"perf.kernel_efficiency_scale": 7.0}
    shared.write_text(yaml.safe_dump(text))
    assert_one_line_error(*run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--engine", "vllm",
                                   "--calibration", str(shared)), "outside its allowed range")
    shared.write_text("kind: something-else\n")
    assert_one_line_error(*run_cli(capsys, "calibrate", "--project", str(measured), "--import", str(shared)),
                          "not a calibration profile")
    assert_one_line_error(*run_cli(capsys, "estimate", "--model", "llama-3.1-8b", "--project", str(measured),
                                   "--scenario", "serve-8b", "--calibration", "nope"), "calibrations: h100-sxm/vllm")


def test_the_readme_loop_on_the_published_mlperf_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's example: NVIDIA's MLPerf Inference v4.1 DGX-H100 Llama 2 70B Offline summary,
    with I1's layout from docs/validation.md; the error before calibration is I1's (-4.7%)."""
    project = tmp_path / "plan.gpuwb"
    run_cli(capsys, "project", "new", str(project))
    summary = DATA / "mlperf" / "DGX-H100_H100-SXM-80GBx8_TRT" / "llama2-70b-99.9" / "Offline" / "mlperf_log_summary.txt"
    code, out, err = run_cli(capsys, "measure", "import", str(summary), "--project", str(project), "--scenario",
                             "llama2-70b-offline", "--model", "llama-2-70b", "--tp", "2", "--batch", "896",
                             "--seq-len", "300", "--dtype", "fp8", "--weights", "fp8", "--kv-dtype", "fp8",
                             "--batching", "chunked")
    assert code == 0, err
    assert "8 x h100-sxm" in out  # from the system folder's name
    code, out, err = run_cli(capsys, "calibrate", "--project", str(project), "--json")
    assert code == 0, err
    doc = json.loads(out)
    [tokens] = [r for r in doc["residuals"] if r["metric"] == "output_tokens_per_s"]
    assert tokens["measured"] == 24524.9 and tokens["error_before"] == pytest.approx(-0.047, abs=0.002)
    assert doc["assumptions"] == {}  # one measurement within the noise of a run moves nothing
    code, out, err = run_cli(capsys, "estimate", "--project", str(project), "--scenario", "llama2-70b-offline",
                             "--calibration", "h100-sxm/generic")
    assert code == 0 and out.startswith("calibrated on 1 measurement ("), err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


def test_compare_calibrates_only_the_candidate_the_profile_was_fitted_on(
        measured: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, "calibrate", "--project", str(measured))
    flags = ("compare", "--project", str(measured), "--gpus-list", "h100-sxm,a100-80gb-sxm", "--json")
    plain = _json(capsys, *flags)
    fitted = _json(capsys, *flags, "--calibration", "h100-sxm/vllm")
    assert "calibration" not in plain
    assert fitted["calibration"]["mark"].startswith("calibrated on 3 measurements (")
    assert fitted["calibration"]["applied"] is True and fitted["calibration"]["applies_to"] == "h100-sxm / vllm"

    def tpot(doc: dict, gpu: str) -> float:
        [row] = [r for r in doc["scenarios"][0]["results"] if r["accelerator"] == gpu]
        return row["values"]["tpot_s"]

    assert tpot(fitted, "h100-sxm") != pytest.approx(tpot(plain, "h100-sxm"), rel=1e-3)
    assert tpot(fitted, "a100-80gb-sxm") == pytest.approx(tpot(plain, "a100-80gb-sxm"), rel=1e-12)
    code, out, _ = run_cli(capsys, *flags[:-1], "--calibration", "h100-sxm/vllm")
    assert out.startswith("calibrated on 3 measurements (") and "for h100-sxm / vllm)" in out.splitlines()[0]
    code, out, _ = run_cli(capsys, "compare", "--project", str(measured), "--gpus-list", "l40s,a100-80gb-sxm",
                           "--calibration", "h100-sxm/vllm")
    assert code == 0 and "nothing was calibrated" in out.splitlines()[0]


def test_sweep_solve_and_sensitivity_carry_the_calibration(measured: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(capsys, "calibrate", "--project", str(measured))
    base = ("--project", str(measured), "--scenario", "serve-8b")
    cal = ("--calibration", "h100-sxm/vllm")
    plain = _json(capsys, "sweep", *base, "--vary", "batch=1,8", "--keys", "performance.tpot_s")
    fitted = _json(capsys, "sweep", *base, *cal, "--vary", "batch=1,8", "--keys", "performance.tpot_s")
    assert "calibration" not in plain and fitted["calibration"]["measurements"] == 3
    assert [p["performance.tpot_s"] for p in fitted["points"]] != [p["performance.tpot_s"] for p in plain["points"]]
    code, out, err = run_cli(capsys, "sweep", *base, *cal, "--vary", "batch=1,8", "--format", "csv")
    assert code == 0 and out.startswith("batch,") and "calibrated on 3 measurements" in err
    assert_one_line_error(*run_cli(capsys, "sweep", *base, *cal, "--vary", "gpu=h100-sxm,l40s"), "--vary gpu")

    for question in ("max-batch", "max-batch-tpot"):
        doc = _json(capsys, "solve", question, *base, *cal, "--max-tpot", "0.02", "--json")
        assert doc["calibration"]["name"] == "h100-sxm/vllm", question
    doc = _json(capsys, "solve", "cheapest", *base, *cal, "--gpus-list", "h100-sxm,l40s", "--json")
    assert doc["calibration"]["applied"] is True
    code, out, _ = run_cli(capsys, "solve", "max-batch", *base, *cal)
    assert out.startswith("calibrated on 3 measurements (") and "max-batch: batch_size" in out
    assert_one_line_error(*run_cli(capsys, "solve", "max-batch", *base, "--gpu", "l40s", *cal), "fitted on h100-sxm")

    plain = _json(capsys, "sensitivity", *base, "--json")
    fitted = _json(capsys, "sensitivity", *base, *cal, "--json")
    assert fitted["calibration"]["mark"].startswith("calibrated on 3") and fitted["base"] != plain["base"]


def test_report_gains_the_calibration_section(qapp, measured: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                              capsys: pytest.CaptureFixture[str]) -> None:
    # qapp: the report paints with the tests' QApplication, never one of its own that would outlive it
    run_cli(capsys, "calibrate", "--project", str(measured))
    pdf = tmp_path / "r.pdf"
    code, out, err = run_cli(capsys, "report", "--project", str(measured), "--sections", "summary,calibration",
                             "--calibration", "h100-sxm/vllm", "-o", str(pdf))
    assert code == 0, err
    assert "; calibrated on 3 measurements (" in out and pdf.stat().st_size > 0
    assert_one_line_error(*run_cli(capsys, "report", "--project", str(measured), "--calibration", "nope", "-o",
                                   str(tmp_path / "x.pdf")), "calibrations: h100-sxm/vllm")
    assert not (tmp_path / "x.pdf").exists()
