"""The report's Calibration section and the calibrated mark on the estimates it applies to."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.measure.profile import CalibrationProfile
from workbench.report.document import ReportRequest, collect
from workbench.report.sections import Body, build_body

H100 = Scenario(name="Chat on H100", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16, serving={"engine": "vllm"})
A100 = H100.model_copy(update={"name": "Chat on A100", "gpu": "a100-80gb-sxm"})
PROFILE = CalibrationProfile(
    name="h100 lab run", gpu="h100-sxm", engine="vllm", created=dt.datetime(2026, 3, 4, 5, 6, tzinfo=dt.UTC),
    measurements=2, assumptions={"perf.bandwidth_efficiency_scale": 0.72},
    parameters=[
        {"id": "perf.bandwidth_efficiency_scale", "title": "Bandwidth share", "unit": "x", "default": 0.8,
         "low": 0.72, "high": 0.84, "value": 0.72, "change": 0.72 / 0.8 - 1, "moved": True},
        {"id": "perf.step_overhead_s", "title": "Step overhead", "unit": "s", "default": 0.001, "low": 0.0003,
         "high": 0.003, "value": 0.001, "change": 0.0, "moved": False},
    ],
    fit={"median_abs_error_before": 0.2, "median_abs_error_after": 0.05, "median_abs_error_left_out": 0.07},
    residuals=[{"measurement": "#1 run.json", "metric": "tpot_mean_s", "unit": "s", "measured": 0.0123,
                "error_before": -0.2, "error_after": 0.031, "error_left_out": 0.07}],
    notes=["moe.load_imbalance: no measured metric depends on it here, not fitted"],
)


def _body_text(request: ReportRequest):  # type: ignore[no-untyped-def]
    data = collect(request)
    body = build_body(data, Body())
    cells = [cell for t in body.tables for row in [t.header or [], *t.rows] for cell in row]
    return data, "\n".join([body.text(), *cells])


def test_the_profile_calibrates_its_gpu_only_and_the_section_shows_the_fit() -> None:
    project = Project(name="plan", scenarios=(H100, A100))
    plain, plain_text = _body_text(ReportRequest(project=project, sections=("cover", "summary", "calibration",
                                                                             "assumptions")))
    data, text = _body_text(ReportRequest(project=project, sections=("cover", "summary", "calibration",
                                                                      "assumptions"), calibration=PROFILE))
    tpot = lambda d, i: d.estimates[i].get("performance.tpot_s")  # noqa: E731
    assert tpot(data, 0) > tpot(plain, 0) * 1.05  # a lower bandwidth share: slower on the H100
    assert tpot(data, 1) == tpot(plain, 1)  # the A100 keeps its defaults
    assert "Calibration" not in plain_text and "calibrated" not in plain_text
    assert "Calibrated on 2 measurements (2026-03-04), profile &#x27;h100 lab run&#x27;" in text
    assert "(Chat on H100)" in text
    for expected in ("Calibrated here", "Not calibrated", "Chat on A100", "h100-sxm / vllm", "2026-03-04 05:06 UTC",
                     "0.8", "0.72 – 0.84", "-10.0%", "unchanged", "#1 run.json", "TPOT mean", "12.3 ms", "-20.0%",
                     "+3.1%", "+7.0%", "left out 7.0%", "moe.load_imbalance", "(calibrated)"):
        assert expected in text, expected


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")
def test_the_pdf_has_the_section(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.report.pdf import export_report

    path = tmp_path / "r.pdf"
    export_report(ReportRequest(project=Project(name="plan", scenarios=(H100,)), calibration=PROFILE), path)
    text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
    assert "Residuals per measurement" in text and "Assumptions fitted" in text
    assert "calibrated on 2 measurements (2026-03-04)" in text
