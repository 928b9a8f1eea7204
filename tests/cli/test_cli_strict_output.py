"""Machine-readable output is strict JSON (no NaN/Infinity) and CSV without "nan"/"inf";
text output never carries terminal control characters."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main
from workbench.cli.output import escape_control, sanitize, strict_json

BASE = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def strict_loads(text: str) -> Any:
    """json.loads that refuses NaN, Infinity and -Infinity (Python's parser accepts them)."""
    return json.loads(text, parse_constant=_refuse_constant)


def _finite_everywhere(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite_everywhere(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite_everywhere(v) for v in value)
    return True


# --- extremes that used to end as NaN/Infinity ---------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["--train-tokens", "1e999", "--workload", "pretrain"],
    ["--set", "memory.fragmentation=inf"],
    ["--set", "perf.kernel_efficiency_scale=nan"],
    ["--usd-per-gpu-hour", "inf"],
    ["--batch", "inf"],
])
def test_infinite_inputs_are_refused_not_printed(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run_cli(capsys, "estimate", *BASE, *argv, "--json")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [
    ["estimate", "--workload", "pretrain", "--gpus", "1048576", "--tp", "8", "--train-tokens", "1e18",
     "--usd-per-gpu-hour", "1e9", "--purchase-usd", "1e9", "--power-usd-per-kwh", "1e9", "--years", "10"],
    ["estimate", "--batch", "1048576", "--seq-len", "16777216", "--gen-len", "16777216",
     "--set", "perf.kernel_efficiency_scale=0.01", "--set", "perf.bandwidth_efficiency_scale=0.01",
     "--set", "perf.step_overhead_s=60"],
    ["estimate", "--workload", "finetune", "--method", "qlora", "--mfu", "1e-300", "--train-tokens", "1e18"],
    ["estimate", "--gpu-mem-util", "1e-300", "--batch", "1048576"],
    ["estimate", "--workload", "pretrain", "--set", "comm.latency_inter_node_s=1", "--set",
     "comm.bandwidth_efficiency=0.01", "--gpus", "1048576", "--zero", "3", "--years", "1e-300"],
    ["solve", "max-batch", "--seq-len", "16777216"],
    ["solve", "max-context", "--gpu-mem-util", "1e-300"],
    ["solve", "min-gpus", "--workload", "pretrain", "--seq-len", "16777216"],
    ["sweep", "--vary", "batch=1,1048576", "--vary", "seq-len=1,16777216", "--mfu", "1e-300"],
    ["sensitivity", "--workload", "pretrain", "--train-tokens", "1e18", "--usd-per-gpu-hour", "1e9"],
])
def test_extreme_but_allowed_inputs_give_strict_json(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, err = run_cli(capsys, *command[:2] if command[0] == "solve" else command[:1], *BASE,
                             *(command[2:] if command[0] == "solve" else command[1:]),
                             *([] if command[0] == "sweep" else ["--json"]))
    assert code == 0, err
    doc = strict_loads(out)
    assert _finite_everywhere(doc)


def test_an_unbounded_result_is_null_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    """An MFU of 1e-300 is allowed (above zero) and makes a training run last forever: the time and
    cost are null, each named in a non-finite-value warning, and the document stays strict JSON."""
    code, out, err = run_cli(capsys, "estimate", *BASE, "--workload", "pretrain", "--mfu", "1e-300",
                             "--train-tokens", "1e18", "--json")
    assert code == 0, err
    doc = strict_loads(out)
    assert doc["performance"]["train_time_days"] is None and doc["cost"]["total_usd"] is None
    named = {w["message"].split()[0] for w in doc["warnings"] if w["code"] == "non-finite-value"}
    assert {"performance.train_time_days", "cost.total_usd"} <= named


def test_non_finite_result_becomes_null_with_a_warning(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An estimator that divides by zero (a plugin's, say) cannot make the output invalid JSON."""
    from workbench.engine.estimate import Estimate

    original = Estimate.to_json

    def with_infinities(self: Estimate, *args: Any, **kwargs: Any) -> dict[str, Any]:
        doc = original(self, *args, **kwargs)
        doc["performance"]["tokens_per_s"] = math.inf
        doc["memory"]["per_gpu"]["activations"] = math.nan
        return doc

    monkeypatch.setattr(Estimate, "to_json", with_infinities)
    code, out, err = run_cli(capsys, "estimate", *BASE, "--json")
    assert code == 0, err
    assert "NaN" not in out and "Infinity" not in out
    doc = strict_loads(out)
    assert doc["performance"]["tokens_per_s"] is None and doc["memory"]["per_gpu"]["activations"] is None
    flagged = [w for w in doc["warnings"] if w["code"] == "non-finite-value"]
    assert sorted(w["message"].split()[0] for w in flagged) == [
        "memory.per_gpu.activations", "performance.tokens_per_s"]
    assert all(w["severity"] == "warning" for w in flagged)


def test_sweep_csv_and_json_write_non_finite_as_empty_and_null(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.engine import sweep

    original = sweep._rows_of

    def with_nan(*args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        return [(combo, (math.nan, *values[1:]), error) for combo, values, error in original(*args, **kwargs)]

    monkeypatch.setattr(sweep, "_rows_of", with_nan)
    code, out, err = run_cli(capsys, "sweep", *BASE, "--vary", "batch=1,2", "--keys", "memory.per_gpu.total,memory.fits",
                             "--format", "csv")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "batch,memory.per_gpu.total,memory.fits,error"
    assert lines[1:] == ["1,,True,", "2,,True,"]
    code, out, err = run_cli(capsys, "sweep", *BASE, "--vary", "batch=1,2", "--keys", "memory.per_gpu.total")
    doc = strict_loads(out)
    assert [p["memory.per_gpu.total"] for p in doc["points"]] == [None, None]
    assert [w["message"].split()[0] for w in doc["warnings"]] == [
        "points[0].memory.per_gpu.total", "points[1].memory.per_gpu.total"]


def test_comparison_csv_and_html_never_show_nan() -> None:
    from workbench.engine.compare import format_metric
    from workbench.report.exports import _cell

    assert _cell(math.inf) == "" and _cell(math.nan) == "" and _cell(0.25) == "0.25"
    assert format_metric("tpot_s", math.inf) == "-" and format_metric("tpot_s", math.nan) == "-"


def test_strict_json_helper() -> None:
    doc = {"a": [1.0, math.inf, {"b": -math.inf}], "c": 10 ** 5000, "warnings": [{"code": "x"}], "d": True}
    text = strict_json(doc)
    parsed = strict_loads(text)
    assert parsed["a"] == [1.0, None, {"b": None}] and parsed["c"] is None and parsed["d"] is True
    assert [w["code"] for w in parsed["warnings"]] == ["x", "non-finite-value", "non-finite-value",
                                                       "non-finite-value"]
    assert sanitize({"x": 1.5})[1] == []
    assert strict_loads(strict_json(math.nan)) == {"value": None, "warnings": [
        {"code": "non-finite-value", "message": "(document) was not a finite number; written as null",
         "severity": "warning", "fix": strict_loads(strict_json(math.nan))["warnings"][0]["fix"]}]}


def test_charts_survive_non_finite_figures() -> None:
    """The PDF report crashed (SIGSEGV) when a NaN reached its memory chart; a chart now draws such
    a figure as missing. Run in a child process: a crash must fail this test, not end the suite."""
    code = textwrap.dedent(
        """
        import math
        from PySide6.QtCore import QRectF
        from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
        from workbench.catalog.resolve import resolve_scenario
        from workbench.core.scenario import Scenario
        from workbench.engine.quantity import Quantity
        from workbench.pluginhost import default_engine
        from workbench.report.charts import MemoryStackChart, RooflineChart

        app = QGuiApplication([])
        scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain")
        estimate = default_engine().run(resolve_scenario(scenario))
        for key in list(estimate.values):
            if key.startswith(("memory.", "roofline.")) and isinstance(estimate.values[key].value, float):
                bad = (math.nan, math.inf, -math.inf)[hash(key) % 3]
                estimate.values[key] = Quantity(bad, estimate.values[key].unit)
        for chart in (MemoryStackChart(estimate), RooflineChart(estimate)):
            image = QImage(680, int(chart.height_for(680)), QImage.Format.Format_RGB32)
            image.fill(QColor("white"))
            painter = QPainter(image)
            chart.paint(painter, QRectF(0, 0, image.width(), image.height()))
            painter.end()
        print("painted")
        """
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "painted"


# --- control characters in text output -----------------------------------------------------------

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\x9b31m\u202ename\r"


def test_escape_helper() -> None:
    assert escape_control(HOSTILE) == "evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202ename\\x0d"
    assert escape_control("tab\tand\nnewline stay; ünïcødé too") == "tab\tand\nnewline stay; ünïcødé too"


def _no_raw_controls(text: str) -> None:
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e\r"), repr(text[:200])


def test_names_are_printed_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "scenario", *BASE, "--name", HOSTILE)
    assert code == 0, err
    _no_raw_controls(out)
    assert "evil\\x1b]0;pwned\\x07" in out
    code, out, err = run_cli(capsys, "estimate", *BASE, "--name", HOSTILE, "--explain")
    assert code == 0
    _no_raw_controls(out)
    code, out, err = run_cli(capsys, "estimate", "--model", "x" + HOSTILE, "--gpu", "h100-sxm")
    assert code == 2
    _no_raw_controls(err)
    assert "\\x1b]0;pwned" in err and len(err.strip().splitlines()) == 1
    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"model": "llama-3.1-8b", "name": HOSTILE}))
    code, out, _ = run_cli(capsys, "estimate", "--scenario", str(scenario))
    assert code == 0
    _no_raw_controls(out)


def test_project_names_are_printed_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "p.gpuwb"
    code, out, err = run_cli(capsys, "project", "new", str(project), "--name", HOSTILE)
    assert code == 0, err
    code, out, err = run_cli(capsys, "project", "add-scenario", str(project), "--name", "s" + HOSTILE, *BASE)
    assert code == 0, err
    code, out, err = run_cli(capsys, "project", "list", str(project))
    assert code == 0, err
    _no_raw_controls(out)
    assert "evil\\x1b]0;pwned" in out
    code, out, err = run_cli(capsys, "project", "list", str(project), "--json")
    assert strict_loads(out)["name"] == HOSTILE  # JSON keeps the name exactly (escaped as \\u001b)


def test_real_process_output_is_escaped() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-m", "workbench", "scenario", *BASE, "--name", HOSTILE],
                            capture_output=True, env=env, timeout=60)
    assert result.returncode == 0
    assert b"\x1b" not in result.stdout and b"\\x1b]0;pwned" in result.stdout
