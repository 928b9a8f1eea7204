"""The PDF sizing report, read back with poppler: sections, vectors, fonts, pages, numbers.

Reports are made once per module with the real engine (three scenarios: serving, training, and
one that does not fit) and read with ``pdftotext`` / ``pdfimages`` / ``pdffonts`` / ``pdfinfo``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest

from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.explain import format_quantity
from workbench.report.document import SECTION_IDS, ReportRequest, collect, parse_sections

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")

SCENARIOS = (
    Scenario(name="Chat 8B on H100", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16),
    Scenario(
        name="Pretrain 70B on 64 H100",
        model="llama-3.1-70b",
        gpu="h100-sxm",
        num_gpus=64,
        workload="pretrain",
        seq_len=4096,
        global_batch_size=512,
        train_tokens=1e11,
        recompute="full",
        parallel={"dp": 64, "zero_stage": 3},
    ),
    Scenario(name="70B on one L40S", model="llama-3.1-70b", gpu="l40s", batch_size=8),
)
TITLES = {
    "summary": "Executive summary",
    "inputs": "Inputs",
    "memory": "Memory per GPU",
    "roofline": "Roofline",
    "comparison": "Comparison",
    "sensitivity": "Sensitivity",
    "assumptions": "Assumptions and formulas",
    "warnings": "Warnings and fixes",
}


def _text(pdf: Path) -> str:
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    )
    return unicodedata.normalize("NFKC", out.stdout)


def _pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def project() -> Project:
    return Project(name="Q3 capacity plan", author="Ada Planner", scenarios=SCENARIOS)


@pytest.fixture(scope="module")
def full_report(qapp, project: Project, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from workbench.report.pdf import export_report

    path = tmp_path_factory.mktemp("report") / "full.pdf"
    request = ReportRequest(project=project)
    result = export_report(request, path)
    return path, result, collect(request)


@pytest.fixture(scope="module")
def partial_report(qapp, project: Project, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    from workbench.report.pdf import export_report

    path = tmp_path_factory.mktemp("report") / "partial.pdf"
    request = ReportRequest(
        project=project,
        scenarios=("Chat 8B on H100", "70B on one L40S"),
        sections=("cover", "summary", "memory", "warnings"),
        page_size="letter",
    )
    export_report(request, path)
    return path


def test_every_section_is_in_the_full_report(full_report, project: Project) -> None:  # type: ignore[no-untyped-def]
    path, result, _ = full_report
    text = _text(path)
    for title in TITLES.values():
        assert title in text, title
    for heading in ("Models", "Hardware", "Scenarios", "Key figures", "Formulas"):
        assert heading in text
    assert "Q3 capacity plan" in text and "Ada Planner" in text and "GPU Planning Workbench 0.1.0" in text
    assert "Recommendation" in text
    for scenario in SCENARIOS:
        assert scenario.name in text
    assert result.pages == _pages(path)


def test_chosen_sections_and_scenarios_only(partial_report: Path) -> None:
    text = _text(partial_report)
    for present in (
        "Executive summary",
        "Memory per GPU",
        "Warnings and fixes",
        "Chat 8B on H100",
        "70B on one L40S",
    ):
        assert present in text
    for absent in (
        "Roofline",
        "Arithmetic intensity",
        "Assumptions and formulas",
        "Comparison",
        "Inputs",
        "Sensitivity",
        "Pretrain 70B on 64 H100",
        "Formula (values substituted)",
    ):
        assert absent not in text, absent
    info = subprocess.run(["pdfinfo", str(partial_report)], capture_output=True, text=True, check=True).stdout
    assert "612 x 792 pts (letter)" in info


def test_charts_are_vectors_and_fonts_are_embedded(full_report) -> None:  # type: ignore[no-untyped-def]
    path, _, _ = full_report
    images = subprocess.run(
        ["pdfimages", "-list", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert len(images.strip().splitlines()) == 2, images  # the two header lines: no image at all
    fonts = subprocess.run(["pdffonts", str(path)], capture_output=True, text=True, check=True).stdout
    rows = fonts.strip().splitlines()[2:]
    assert rows, fonts
    for row in rows:
        assert re.search(r"\s(yes)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+$", row), row  # emb column says yes


def test_page_count_and_page_numbers(full_report) -> None:  # type: ignore[no-untyped-def]
    path, result, _ = full_report
    pages = result.pages
    assert 10 <= pages <= 60
    text = _text(path)
    assert f"Page 1 of {pages}" in text and f"Page {pages} of {pages}" in text
    assert len(re.findall(r"Page \d+ of \d+", text)) == pages


def test_numbers_equal_the_estimates(full_report) -> None:  # type: ignore[no-untyped-def]
    from workbench.report.sections import format_value

    path, _, data = full_report
    text = _text(path)
    for estimate in data.estimates:
        memory = estimate.values["memory.per_gpu.total"]
        assert format_value(memory) == format_quantity(memory)  # the CLI's formatting
        assert format_quantity(memory) in text
        ridge = estimate.values["roofline.ridge_point"].value
        assert f"ridge {ridge:,.3g} FLOP/byte" in text or f"ridge {ridge:,.0f} FLOP/byte" in text
    chat = data.estimates[0]
    assert format_value(chat.values["performance.tokens_per_s"]) in text
    assert format_quantity(chat.values["performance.ttft_s"]) in text
    # The datasheet figures and their sources (with dates) are in the inputs.
    h100 = chat.resolved.cluster.accelerator
    assert f"{h100.memory_bandwidth_gbps:,.0f} GB/s" in text
    source = h100.provenance["memory_bandwidth_gbps"]
    assert source.title in text and f"retrieved {source.retrieved.isoformat()}" in text
    # Every warning of the scenario that does not fit is there, with its fix.
    oom = next(w for w in data.estimates[2].warnings if w.severity == "error")
    flat = " ".join(text.split())
    # Its fixes are the window's: changes checked to fit, in the window's words (no CLI flags).
    fixes = data.fixes[data.estimates[2].resolved.scenario.name]
    assert fixes and all(f.estimate.get("memory.fits") is True for f in fixes)
    assert " ".join(fixes[0].label.split())[:40] in flat
    assert oom.message[:40] in flat
    assert "--batch" not in flat and "--kv-dtype" not in flat


def test_assumptions_are_listed_with_sources(full_report) -> None:  # type: ignore[no-untyped-def]
    path, _, data = full_report
    text = _text(path)
    ids = {row["id"] for e in data.estimates for row in e.assumptions_used()}
    assert ids
    for ident in ids:
        assert ident in text, ident


def test_rows_never_split_and_headings_never_end_a_page(qapp, full_report, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QPdfWriter

    from workbench.report import pdf

    _, _, data = full_report
    writer = QPdfWriter(str(tmp_path / "layout.pdf"))
    writer.setResolution(pdf.DPI)
    writer.setPageLayout(pdf._page_layout("a4"))
    doc, content = pdf.build_document(data, writer)
    height = content.height()
    block = doc.begin()
    seen_rows = headings = 0
    while block.isValid():
        layout = block.layout()
        for i in range(layout.lineCount()):  # no line (a table row is one line) crosses a page boundary
            line = layout.lineAt(i)
            top = layout.position().y() + line.y()
            assert int(top // height) == int((top + line.height() - 0.01) // height), block.text()[:40]
        if "￼" in block.text():
            seen_rows += 1
        if block.blockFormat().headingLevel() and block.next().isValid():
            headings += 1
            assert int(pdf._line_top(block) // height) == int(pdf._line_top(block.next()) // height), (
                block.text()
            )
        block = block.next()
    assert seen_rows > 50 and headings > 10
    assert "(continued)" in _text(full_report[0])  # a long table repeats its header on the next page


def test_failed_export_leaves_no_file(qapp, project: Project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.report.document import ReportCancelled
    from workbench.report.pdf import export_report

    target = tmp_path / "report.pdf"

    def cancel(done: int, total: int, message: str) -> None:
        if message.startswith("Writing page 2"):
            raise ReportCancelled

    with pytest.raises(ReportCancelled):
        export_report(
            ReportRequest(project=project, sections=("cover", "summary", "memory")), target, progress=cancel
        )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="does not exist"):
        export_report(ReportRequest(project=project, sections=("cover",)), tmp_path / "missing" / "r.pdf")
    with pytest.raises(InputError, match="no scenario named 'ghost'"):
        export_report(ReportRequest(project=project, scenarios=("ghost",)), target)
    assert list(tmp_path.iterdir()) == []


def test_an_existing_report_is_replaced_whole(qapp, project: Project, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.report.pdf import export_report

    target = tmp_path / "report.pdf"
    target.write_bytes(b"old")
    export_report(ReportRequest(project=project, scenarios=("Chat 8B on H100",), sections=("cover",)), target)
    assert target.read_bytes().startswith(b"%PDF")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.pdf"]


def test_section_names_are_checked() -> None:
    assert parse_sections("warnings, cover") == ("cover", "warnings")
    assert parse_sections(None) == SECTION_IDS
    with pytest.raises(InputError, match="unknown section 'charts'"):
        parse_sections("cover,charts")


def test_charts_paint_on_any_device(qapp, full_report) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QColor, QImage, QPainter

    from workbench.report.charts import MemoryStackChart, RooflineChart

    _, _, data = full_report
    for estimate in data.estimates:
        for chart in (MemoryStackChart(estimate), RooflineChart(estimate)):
            image = QImage(680, int(chart.height_for(680)), QImage.Format.Format_RGB32)
            image.fill(QColor("white"))
            painter = QPainter(image)
            chart.paint(painter, QRectF(0, 0, image.width(), image.height()))
            painter.end()
            inked = sum(
                1
                for x in range(0, image.width(), 7)
                for y in range(0, image.height(), 7)
                if image.pixelColor(x, y) != QColor("white")
            )
            assert inked > 100


def test_report_layer_imports_no_widgets() -> None:
    """report/ may paint with QtGui but never pulls in QtWidgets or pyqtgraph (ARCHITECTURE.md)."""
    code = textwrap.dedent(
        """
        import importlib.abc, sys
        class NoWidgets(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name in ("PySide6.QtWidgets", "pyqtgraph") or name.startswith("workbench.gui"):
                    raise ImportError(f"{name} is blocked")
                return None
        sys.meta_path.insert(0, NoWidgets())
        import workbench.report.document, workbench.report.charts, workbench.report.sections
        import workbench.report.pdf, workbench.cli.report
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr


def test_plugin_sections_are_offered_and_guarded(  # type: ignore[no-untyped-def]
    qapp, project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section registered through workbench_register_report_sections is listed and rendered; one
    that raises is reported in its place and the rest of the report is still written."""
    from workbench.report import sections
    from workbench.report.pdf import export_report

    class Notes:
        id, title, description = "site-notes", "Site notes", "Rack space and power at the site"

        def html(self, data) -> str:  # type: ignore[no-untyped-def]
            return f"<p>Rack budget for {len(data.estimates)} scenarios: 42U.</p>"

    class Broken:
        id, title = "broken-section", "Broken"

        def html(self, data) -> str:  # type: ignore[no-untyped-def]
            raise RuntimeError("no rack data")

    monkeypatch.setattr(sections, "plugin_sections", lambda: [Notes(), Broken()])
    assert [s.id for s in sections.available_sections()][-2:] == ["site-notes", "broken-section"]
    target = tmp_path / "plugins.pdf"
    export_report(
        ReportRequest(project=project, sections=("summary", "site-notes", "broken-section")), target
    )
    text = _text(target)
    assert "Site notes" in text and "Rack budget for 3 scenarios: 42U." in text
    assert "failed: no rack data" in text and "Executive summary" in text


def test_the_saved_comparison_sets_candidates_and_targets(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With no candidates or targets asked for, the report compares what the project's saved
    comparison (the window's Compare tab) holds, and its recommendation meets those targets;
    the request's own candidates and targets win over the saved ones."""
    from workbench.core.project import Comparison
    from workbench.engine.compare import Targets
    from workbench.report.document import comparison_candidates
    from workbench.report.pdf import export_report

    serve = Scenario(name="chat", model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", batch_size=32)
    saved = Comparison(name="Compare tab", accelerators=("h100-sxm", "h200-sxm"), max_tpot_s=0.06)
    project = Project(name="Saved", scenarios=(serve,), comparisons=(saved,))
    request = ReportRequest(project=project, sections=("summary", "comparison"))
    assert comparison_candidates(request) == ("h100-sxm", "h200-sxm")
    data = collect(request)
    assert data.comparison.targets == Targets(max_tpot_s=0.06)
    rec = data.comparison.recommendation
    assert rec is not None and rec.accelerator == "h100-sxm"  # the H200 alone misses 60 ms TPOT
    pdf = tmp_path / "saved.pdf"
    export_report(request, pdf)
    text = " ".join(_text(pdf).split())
    assert "Targets: TPOT at most 60 ms" in text

    own = ReportRequest(project=project, sections=("comparison",), candidates=("h200-sxm", "b200"),
                        targets=Targets())
    data = collect(own)
    assert {c.accelerator for c in data.comparison.candidates} == {"h200-sxm", "b200"}
    assert data.comparison.targets == Targets()


def test_memory_chart_has_a_recurrent_state_segment_for_state_space_models(qapp) -> None:  # type: ignore[no-untyped-def]
    from engine_fixtures import GPU, LLAMA_8B, NODE
    from workbench_memory.kv_cache import KvCacheEstimator
    from workbench_memory.parameters import ParametersEstimator
    from workbench_memory.stack import MemoryStackEstimator

    from workbench.catalog.hf_config import import_hf_config
    from workbench.core import Cluster, Scenario
    from workbench.core.resolved import ResolvedScenario
    from workbench.engine.pipeline import Engine
    from workbench.report.charts import MemoryStackChart

    mamba = import_hf_config(
        {"model_type": "mamba2", "hidden_size": 1024, "num_heads": 32, "head_dim": 64, "n_groups": 1,
         "state_size": 128, "num_hidden_layers": 24, "vocab_size": 50288, "expand": 2}, name="Mamba-2 test",
    ).architecture  # fmt: skip
    engine = Engine([ParametersEstimator(), KvCacheEstimator(), MemoryStackEstimator()])
    charts = {}
    for arch in (LLAMA_8B, mamba):
        scenario = Scenario(model=arch.name, gpu=GPU.id, batch_size=8, seq_len=2048)
        estimate = engine.run(ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=1)))
        charts[arch.name] = (MemoryStackChart(estimate), estimate)
    llama, _ = charts[LLAMA_8B.name]
    chart, estimate = charts["Mamba-2 test"]
    assert llama.segments["recurrent_state"] == (0.0, 0.0) and llama.segments["kv_cache"][0] > 0
    assert chart.segments["recurrent_state"][0] == estimate.get("memory.per_gpu.recurrent_state") > 0
    assert chart.segments["kv_cache"] == (0.0, 0.0)


def test_the_comparison_carries_its_decision_confidence_when_asked(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """confidence_draws > 0: the comparison section adds the share of draws each candidate wins,
    the same shares as engine.confidence gives (one scenario, two candidates priced apart)."""
    from workbench.catalog.resolve import resolve_scenario
    from workbench.engine.compare import Candidate, Targets
    from workbench.engine.confidence import decision_confidence
    from workbench.pluginhost import default_engine
    from workbench.report.pdf import export_report

    project = Project(name="MC", scenarios=(SCENARIOS[0],))
    request = ReportRequest(project=project, sections=("comparison",), candidates=("h100-sxm", "l40s"),
                            confidence_draws=200)  # fmt: skip
    data = collect(request)
    assert data.confidence is not None and data.confidence.draws == 200
    direct = decision_confidence(default_engine(), [SCENARIOS[0]], [Candidate("h100-sxm"), Candidate("l40s")],
                                 lambda s: resolve_scenario(s, project), Targets(), draws=200)  # fmt: skip
    assert data.confidence.shares == direct.shares
    path = tmp_path / "mc.pdf"
    export_report(request, path)
    text = _text(path)
    assert "Decision confidence" in text and "Share of draws" in text
    assert "Pareto fronts" in text and "Throughput per GPU against speed per user" in text
    assert data.pareto is not None and {f.candidate.label for f in data.pareto[1]} == {"h100-sxm", "l40s"}
    best = max(direct.shares, key=direct.shares.get)
    assert f"{direct.shares[best]:.0%}" in text
    plain = tmp_path / "plain.pdf"
    export_report(ReportRequest(project=project, sections=("comparison",), candidates=("h100-sxm", "l40s")), plain)
    assert "Decision confidence" not in _text(plain)


def test_a_training_only_comparison_has_no_pareto_chart(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = Project(name="T", scenarios=(SCENARIOS[1],))
    request = ReportRequest(project=project, sections=("comparison",), candidates=("h100-sxm", "h200-sxm"))
    assert collect(request).pareto is None


def test_the_comparison_at_equal_service_level_and_its_confidence_when_asked(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """iso_sla: the comparison section adds each candidate's cheapest configuration meeting the
    targets, with its share of the draws (the engine's own) and the break-even thresholds."""
    from workbench.catalog.resolve import resolve_scenario
    from workbench.engine.compare import Candidate, Targets
    from workbench.engine.iso_confidence import iso_sla_confidence
    from workbench.pluginhost import default_engine
    from workbench.report.pdf import export_report

    served = Scenario(name="Serve 70B", model="llama-3.1-70b", gpu="h100-sxm", gen_len=256, seq_len=1024)
    project = Project(name="Iso", scenarios=(served,))
    targets = Targets(max_tpot_s=0.05)
    request = ReportRequest(project=project, sections=("comparison",), candidates=("h100-sxm", "mi300x", "b200"),
                            targets=targets, confidence_draws=60, iso_sla=True, weights_options=("bf16", "fp8"))  # fmt: skip
    data = collect(request)
    name, results, confidence, demand = data.iso
    direct = iso_sla_confidence(default_engine(), served, [Candidate(c) for c in ("h100-sxm", "mi300x", "b200")],
                                lambda s: resolve_scenario(s, project), targets, weights=["bf16", "fp8"], draws=60)  # fmt: skip
    assert name == "Serve 70B" and confidence.shares == direct.shares and confidence.break_even == direct.break_even
    path = tmp_path / "iso.pdf"
    export_report(request, path)
    text = _text(path)
    assert "At equal service level" in text and "Share of draws" in text and "Break-even" in text
    winner = results[0]
    assert winner.candidate.label in text and f"{direct.shares[winner.candidate.label]:.0%}" in text
    assert not demand and f"${winner.best.usd_per_million_tokens:.3g}/Mtok" in text  # the cost it is ranked on
    plain = tmp_path / "plain.pdf"
    export_report(ReportRequest(project=project, sections=("comparison",), candidates=("h100-sxm", "mi300x")), plain)
    assert "At equal service level" not in _text(plain)
