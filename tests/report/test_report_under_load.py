"""The report of a serving scenario with a load: the "Under load (simulated)" table in the summary
and the simulated p99 column of the comparison; neither without a load."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.compare import Targets, format_metric
from workbench.report.document import ReportRequest, collect
from workbench.report.sections import Body, build_body

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")

LOADED = Scenario(
    name="RAG under load", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16, seq_len=8192, gen_len=128,
    serving={"batching": "chunked", "arrival_rate": 4, "requests": 200, "slo_ttft_s": 2, "slo_tpot_s": 0.045},
)
PLAIN = Scenario(name="Chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16)
SECTIONS = ("summary", "comparison")


def _request(scenario: Scenario) -> ReportRequest:
    return ReportRequest(
        project=Project(name="Load", scenarios=(scenario,)),
        sections=SECTIONS,
        candidates=("h100-sxm", "l40s"),
        targets=Targets(max_tpot_s=0.04),
    )


def _pdf_text(qapp, request: ReportRequest, path: Path) -> str:  # type: ignore[no-untyped-def]
    from workbench.report.pdf import export_report

    export_report(request, path)
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, text=True, check=True)
    return " ".join(unicodedata.normalize("NFKC", out.stdout).split())


def test_a_loaded_serving_report_shows_the_simulated_tail(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = _pdf_text(qapp, _request(LOADED), tmp_path / "load.pdf")
    assert "Under load (simulated)" in text
    assert "200 requests, Poisson arrivals at 4 requests/s" in text
    for row in ("Time to first token", "Time per output token", "End-to-end latency"):
        assert row in text
    assert "p50 p90 p99" in text
    assert "Goodput:" in text and "meet TTFT at most 2 s and TPOT at most 45 ms" in text
    assert "seed 0" in text and "chunked batching" in text  # the simulation's description, as a footnote
    assert "p99 under 4" in text.split("Comparison", 1)[1]  # the comparison table's column header
    assert "p99 TPOT" in text and "under 4 req/s exceeds 40 ms" in text


def test_the_tables_hold_the_estimates_and_the_rows_percentiles(qapp) -> None:  # type: ignore[no-untyped-def]
    data = collect(_request(LOADED))
    body = build_body(data, Body())
    (estimate,) = data.estimates
    (load,) = [t for t in body.tables if t.title.startswith("Under load (simulated)")]
    assert load.header == ["Latency", "p50", "p90", "p99"]
    e2e = next(r for r in load.rows if r[0] == "End-to-end latency")
    assert e2e[1:] == [format_metric("ttft_s", estimate.get(f"performance.sim.e2e_{q}_s")) for q in ("p50", "p90", "p99")]
    (table,) = [t for t in body.tables if t.title.startswith("Comparison for")]
    column = table.header.index("Simulated p99 under 4 req/s")
    for result, row in zip(data.comparison.scenarios[0].results, table.rows):
        cell = row[column]
        assert f"TTFT {format_metric('ttft_s', result.values['sim_ttft_p99_s'])}" in cell
        assert f"TPOT {format_metric('tpot_s', result.values['sim_tpot_p99_s'])}" in cell


def test_without_a_load_there_is_no_simulated_table(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    text = _pdf_text(qapp, _request(PLAIN), tmp_path / "plain.pdf")
    assert "Key figures" in text and "Comparison" in text
    assert "Under load" not in text and "Simulated p99" not in text and "p99" not in text
