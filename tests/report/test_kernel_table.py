"""The report's "Where the time goes" table, read back from the PDF with poppler: one row per kernel
group of each phase, longest first, with the per-operator model's time, share and bound."""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
from workbench_performance import kernels_for

from workbench.api import estimate
from workbench.catalog.resolve import resolve_scenario
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.pipeline import Engine
from workbench.kernel_breakdown import format_ms, format_share
from workbench.pluginhost.host import PluginHost
from workbench.report.document import ReportRequest
from workbench.report.kernel_table import MAX_ROWS, add_kernel_table
from workbench.report.sections import Body

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")

CHAT = {"name": "Chat 8B on H100", "model": "llama-3.1-8b", "gpu": "h100-sxm", "batch_size": 64}
MOE = {"name": "DeepSeek-V3 on 8 H200", "model": "deepseek-v3", "gpu": "h200-sxm", "num_gpus": 8, "parallel": {"tp": 8}}
TPU = {"name": "8B on a TPU v5e", "model": "llama-3.1-8b", "gpu": "tpu-v5e"}


def _pages(pdf: Path) -> list[str]:
    out = subprocess.run(["pdftotext", "-layout", "-enc", "UTF-8", str(pdf), "-"],
                         capture_output=True, text=True, check=True).stdout
    return [unicodedata.normalize("NFKC", page) for page in out.split("\f")]


@pytest.fixture(scope="module")
def report(qapp, tmp_path_factory: pytest.TempPathFactory) -> list[str]:  # type: ignore[no-untyped-def]
    from workbench.report.pdf import export_report

    path = tmp_path_factory.mktemp("kernels") / "roofline.pdf"
    project = Project(name="Kernels", scenarios=(Scenario(**CHAT), Scenario(**MOE), Scenario(**TPU)))
    export_report(ReportRequest(project=project, sections=("roofline",)), path)
    return _pages(path)


def _lines(pages: list[str]) -> list[str]:
    return [line for page in pages for line in page.splitlines()]


def _row(pages: list[str], name: str, seconds: float, share: float, bound: str, after: int = 0) -> tuple[int, int]:
    """(page, line) of the first table row from line ``after`` on (counted over all pages, as
    :func:`_lines` does) that holds the group's name, time, share and bound, in this order."""
    pattern = re.compile(rf"{re.escape(name)}\s+{re.escape(format_ms(seconds))}\s+{re.escape(format_share(share))}"
                         rf"\s+{re.escape(bound)}(\s|$)")
    n = 0
    for p, page in enumerate(pages):
        for line in page.splitlines():
            if n >= after and pattern.search(line):
                return p, n
            n += 1
    raise AssertionError(f"no row {name} {format_ms(seconds)} {format_share(share)} {bound}")


def test_every_kernel_group_of_both_serving_phases_is_a_row_longest_first(report: list[str]) -> None:
    decode, prefill = kernels_for(estimate(**{k: v for k, v in CHAT.items() if k != "name"}))
    at = 0
    pages = set()
    for phase in (decode, prefill):
        total = phase.total_s
        line = None
        for k in sorted(phase.kernels, key=lambda k: k.seconds, reverse=True):
            page, found = _row(report, k.name, k.seconds, k.seconds / total, k.bound, after=at)
            assert line is None or found > line, k.name  # longest first
            line, at = found, found
            pages.add(page)
    assert len(pages) == 1
    page = report[pages.pop()]
    # On the page with the scenario's roofline figures (its phases' intensity and bound), under them.
    assert "Where the time goes" in page and "Attainable" in page and "Chat 8B on H100" in page
    assert page.index("Attainable") < page.index("Where the time goes")
    assert "decode step, 64 sequences" in page and "prefill of one 2,048-token prompt" in page
    assert f"{format_ms(decode.total_s)} in all" in page
    assert "NVIDIA Hopper" in page and "kernels only, per pipeline stage" in page


def test_many_groups_keep_the_longest_and_sum_the_rest(report: list[str]) -> None:
    decode = kernels_for(estimate(**{k: v for k, v in MOE.items() if k != "name"}))[0]
    assert len(decode.kernels) > MAX_ROWS
    ordered = sorted(decode.kernels, key=lambda k: k.seconds, reverse=True)
    lines = _lines(report)
    start = next(n for n, line in enumerate(lines) if "DeepSeek-V3 on 8 H200" in line)
    at = start
    for k in ordered[:MAX_ROWS - 1]:
        _, at = _row(report, k.name, k.seconds, k.seconds / decode.total_s, k.bound, after=at)
    rest = ordered[MAX_ROWS - 1:]
    seconds = sum(k.seconds for k in rest)
    bounds = " / ".join(sorted({k.bound for k in rest}))
    _, end = _row(report, f"{len(rest)} shorter groups", seconds, seconds / decode.total_s, bounds.split(" / ")[0],
                  after=at)
    listed = "\n".join(lines[start:end])
    assert not [k.name for k in rest if re.search(rf"^\s*{re.escape(k.name)}\s+\d", listed, re.MULTILINE)]


def test_the_generic_profile_is_said_in_red_words(report: list[str]) -> None:
    page = next(p for p in report if "8B on a TPU v5e" in p and "Where the time goes" in p)
    text = " ".join(page.split())
    assert "Generic kernel profile: no published kernel benchmarks for Google Cloud TPU v5e" in text
    chat = next(p for p in report if "Chat 8B on H100" in p and "Where the time goes" in p)
    assert "Generic kernel profile" not in chat


def test_without_a_speed_model_the_table_says_why() -> None:
    host = PluginHost(first_party=("workbench_memory", "workbench_compute", "workbench_cost"), entry_point_group=None)
    no_speed = Engine(host.registry.estimators).run(resolve_scenario(Scenario(**CHAT)))
    body = Body()
    add_kernel_table(body, no_speed)
    assert "Where the time goes" in body.text()
    assert "No speed model for this scenario" in body.text() and body.tables == []
