"""Comparison exports: CSV and JSON read back to the same numbers; HTML is escaped and standalone."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from workbench.api import engine, make_scenario
from workbench.catalog.resolve import resolve_scenario
from workbench.engine.compare import METRICS, Candidate, Targets, compare
from workbench.report import exports


@pytest.fixture(scope="module")
def comparison():  # type: ignore[no-untyped-def]
    serve = make_scenario(
        name='chat <b>"fast"</b> & cheap', model="llama-3.1-70b", gpu="h100-sxm", batch_size=16
    )
    train = make_scenario(
        name="tune",
        model="llama-3.1-8b",
        gpu="h100-sxm",
        workload="pretrain",
        num_gpus=8,
        parallel={"dp": 8, "zero_stage": 1},
        train_tokens=1e10,
    )
    candidates = [
        Candidate("h100-sxm"),
        Candidate("h200-sxm"),
        Candidate("mi300x", usd_per_gpu_hour=3.1),
        Candidate("l40s"),
    ]
    return compare(engine(), [serve, train], candidates, resolve_scenario, Targets(max_tpot_s=0.05))


def test_csv_reads_back_to_the_same_numbers(comparison, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.csv"
    exports.write_csv(comparison, path)
    text = path.read_text(encoding="utf-8")
    header = next(csv.reader(io.StringIO(text)))
    assert (
        "TTFT (s)" in header
        and "Cost per M tokens (USD/Mtoken)" in header
        and "Time to train (days)" in header
    )
    assert len(header) == len(exports.LEADING_COLUMNS) + len(METRICS)
    rows = exports.parse_csv(text)
    results = comparison.rows()
    assert len(rows) == len(results) == 8
    for row, result in zip(rows, results):
        assert row["scenario"] == result.scenario and row["accelerator"] == result.candidate.accelerator
        assert (row["rank"], row["tp"], row["pp"], row["dp"]) == (
            result.rank,
            result.tp,
            result.pp,
            result.dp,
        )
        assert row["recommended"] is result.recommended and row["meets_targets"] is result.meets_targets
        for metric in METRICS:
            assert row[metric.id] == result.values[metric.id], (result.candidate.label, metric.id)
    assert any(row["ttft_s"] is None for row in rows)  # training rows: no TTFT, an empty cell


def test_json_has_the_same_numbers_and_the_units(comparison, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.json"
    exports.write_json(comparison, path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["format"] == exports.FORMAT and doc["schema_version"] == 1
    units = {m["id"]: m["unit"] for m in doc["metrics"]}
    assert units["tpot_s"] == "s" and units["run_usd"] == "USD" and units["tokens_per_kwh"] == "tokens/kWh"
    results = comparison.rows()
    rows = [r for s in doc["scenarios"] for r in s["results"]]
    for row, result in zip(rows, results, strict=True):
        assert row["values"] == result.values
        assert row["failures"] == list(result.failures)
    assert doc["targets"]["max_tpot_s"] == 0.05
    first = doc["scenarios"][0]
    assert first["recommendation"] == (
        comparison.scenarios[0].recommendation.candidate.accelerator
        if comparison.scenarios[0].recommendation
        else None
    )


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.rows = 0

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.tags.append(tag)
        if tag == "tr":
            self.rows += 1

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.text.append(data)


def test_html_is_standalone_escaped_and_shows_units(comparison, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.html"
    exports.write_html(comparison, path, title="Q3 <sizing>")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<b>" not in page and "&lt;b&gt;&quot;fast&quot;&lt;/b&gt; &amp; cheap" in page
    assert "Q3 &lt;sizing&gt;" in page
    assert "<script" not in page and "http" not in page and "<link" not in page  # nothing fetched
    parser = _Cells()
    parser.feed(page)
    assert parser.tags.count("table") == 2
    assert parser.rows == 2 + len(comparison.rows())  # a header row per table
    text = " ".join(parser.text)
    assert 'chat <b>"fast"</b> & cheap' in text  # the name reads back as typed
    assert " ms" in text and "$" in text and "USD/Mtoken" in text and "days" in text
    assert "TPOT" in text and "recommended" in text
