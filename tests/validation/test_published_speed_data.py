"""Schema and coverage of the published speed results in tests/data/published_speed.

The data file holds measured results from public sources, each with its exact source and a
fit / held-out side chosen once per source (README.md beside it states the rule). These tests
check the file, not the workbench's estimates: every record is sourced, split by source, uses
known regimes and catalog ids (or says why not), carries positive metrics, and the coverage
table in the README matches the file. Regenerate that table with
``python tests/validation/test_published_speed_data.py``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from workbench.catalog.accelerators import load_accelerators
from workbench.catalog.models import load_model_catalog

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "published_speed"
DATA = DATA_DIR / "measurements.yaml"
README = DATA_DIR / "README.md"

REGIMES = frozenset(
    {
        "dense_training_bf16",
        "fp8_training",
        "moe_training",
        "dense_serving",
        "moe_serving",
        "small_concurrency_latency",
        "server_ttft_under_load",
        "amd_serving",
    }
)
TRAINING_REGIMES = frozenset({"dense_training_bf16", "fp8_training", "moe_training"})
SPLITS = ("fit", "heldout")
SOURCE_KINDS = frozenset({"mlperf", "vendor-benchmark-repo", "paper", "engine-docs"})
START = "<!-- coverage:start -->"
END = "<!-- coverage:end -->"

# What issue 15's validation asks the collection to cover.
MIN_RECORDS = 80
MIN_VENDORS = 2
MIN_ARCHITECTURES = 4
MIN_MOE_MODELS = 4


@lru_cache(maxsize=1)
def _doc() -> dict:
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


def _records() -> list[dict]:
    return _doc()["records"]


def _sources() -> dict[str, dict]:
    return {s["id"]: s for s in _doc()["sources"]}


def _record_ids() -> list[str]:
    return [r["id"] for r in _records()]


def coverage_block(doc: dict) -> str:
    """The README's coverage section, computed from the data file."""
    records = doc["records"]
    sources = doc["sources"]
    per_split_sources = Counter(s["split"] for s in sources)
    per_split_records = Counter(r["split"] for r in records)
    vendors = sorted({r["vendor"] for r in records})
    archs = sorted({r["architecture"] for r in records})
    moe_models = sorted({r["model"] for r in records if r["moe"]})
    lines = [
        START,
        "",
        f"- records: {len(records)} ({per_split_records['fit']} fit, "
        f"{per_split_records['heldout']} held out)",
        f"- sources: {len(sources)} ({per_split_sources['fit']} fit, "
        f"{per_split_sources['heldout']} held out)",
        f"- vendors: {len(vendors)} ({', '.join(vendors)})",
        f"- architectures: {len(archs)} ({', '.join(archs)})",
        f"- MoE models: {len(moe_models)} ({', '.join(moe_models)})",
        "",
        "| regime | fit | held out | total |",
        "|---|---:|---:|---:|",
    ]
    by_regime: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        by_regime[r["regime"]][r["split"]] += 1
    for regime in sorted(by_regime):
        c = by_regime[regime]
        lines.append(f"| {regime} | {c['fit']} | {c['heldout']} | {c['fit'] + c['heldout']} |")
    lines += ["", "| vendor | fit | held out | total |", "|---|---:|---:|---:|"]
    by_vendor: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        by_vendor[r["vendor"]][r["split"]] += 1
    for vendor in vendors:
        c = by_vendor[vendor]
        lines.append(f"| {vendor} | {c['fit']} | {c['heldout']} | {c['fit'] + c['heldout']} |")
    lines += ["", END]
    return "\n".join(lines)


def _readme_block() -> str:
    text = README.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    assert start >= 0 and end > start, f"{README} lacks the {START} ... {END} section"
    return text[start : end + len(END)]


def test_sources_are_complete_and_unique():
    ids = [s["id"] for s in _doc()["sources"]]
    assert len(ids) == len(set(ids)), "duplicate source ids"
    for s in _doc()["sources"]:
        assert s["split"] in SPLITS, s["id"]
        assert s["source_kind"] in SOURCE_KINDS, s["id"]
        # A repository source names its commit; a paper its title and arXiv id.
        assert s["cite"].strip() and s["title"].strip() and s["split_reason"].strip(), s["id"]
        if s["source_kind"] != "paper":
            repo, _, rest = s["cite"].partition("@")
            commit, _, path = rest.partition(":")
            assert "/" in repo and len(commit) == 40 and path, f"{s['id']}: cite {s['cite']!r}"
            int(commit, 16)


def test_record_ids_are_unique():
    ids = _record_ids()
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]


@pytest.mark.parametrize("record", _records(), ids=_record_ids())
def test_record_schema(record):
    sources = _sources()
    assert record["source_id"] in sources, record["id"]
    source = sources[record["source_id"]]
    # The record's source is its document plus where in it the figure stands.
    assert record["source"].startswith(source["cite"] + " :: "), record["id"]
    assert record["source"].split(" :: ", 1)[1].strip(), record["id"]
    assert record["source_kind"] == source["source_kind"], record["id"]
    assert record["split"] == source["split"], record["id"]
    assert record["regime"] in REGIMES, record["regime"]
    assert record["quote"].strip(), record["id"]
    assert isinstance(record["gpus"], int) and record["gpus"] >= 1, record["id"]
    assert isinstance(record["moe"], bool), record["id"]
    # Regimes that name the model kind or the vendor must agree with the record.
    if record["regime"] in ("moe_training", "moe_serving"):
        assert record["moe"], record["id"]
    if record["regime"] in ("dense_training_bf16", "fp8_training", "dense_serving"):
        assert not record["moe"], record["id"]
    if record["regime"] == "amd_serving":
        assert record["vendor"] == "amd", record["id"]
    workload = record["config"]["workload"]
    if record["regime"] in TRAINING_REGIMES:
        assert workload == "pretraining", record["id"]
    else:
        assert workload == "serving", record["id"]
    assert record["metrics"], record["id"]
    for metric in record["metrics"]:
        value = metric["value"]
        assert metric["name"].strip() and metric["unit"].strip(), record["id"]
        assert isinstance(value, (int, float)) and not isinstance(value, bool), record["id"]
        assert math.isfinite(value) and value > 0, f"{record['id']}: {metric['name']} = {value}"


@pytest.mark.parametrize("record", _records(), ids=_record_ids())
def test_record_catalog_ids(record):
    models = load_model_catalog()
    gpus = load_accelerators()
    if record.get("model_catalog") == "missing":
        # "missing" is for models the catalog lacks, never a way around a typo.
        assert record["model"] not in models, record["id"]
        assert record["model_name"].strip(), record["id"]
    else:
        assert record["model"] in models, f"{record['id']}: unknown model {record['model']!r}"
        is_moe = models[record["model"]].architecture.moe is not None
        assert record["moe"] == is_moe, record["id"]
    if record.get("hardware_catalog") == "missing":
        assert record["hardware"] not in gpus, record["id"]
        assert record["hardware_name"].strip(), record["id"]
        nearest = record["nearest_catalog_hardware"]
        assert nearest in gpus, record["id"]
        assert gpus[nearest].vendor.value == record["vendor"], record["id"]
    else:
        assert record["hardware"] in gpus, f"{record['id']}: unknown hardware {record['hardware']!r}"
        assert gpus[record["hardware"]].vendor.value == record["vendor"], record["id"]


def test_every_source_is_on_one_side_only():
    sides: dict[str, set[str]] = defaultdict(set)
    for r in _records():
        sides[r["source_id"]].add(r["split"])
    assert {k: v for k, v in sides.items() if len(v) > 1} == {}
    # Every listed source contributes records, so the split counts mean what they say.
    assert set(sides) == set(_sources())


def test_architecture_is_consistent_per_hardware():
    arch: dict[str, set[str]] = defaultdict(set)
    for r in _records():
        arch[r["hardware"]].add(r["architecture"])
    assert {k: v for k, v in arch.items() if len(v) > 1} == {}


def test_coverage_meets_the_issue():
    records = _records()
    assert len(records) >= MIN_RECORDS
    assert len({r["vendor"] for r in records}) >= MIN_VENDORS
    assert len({r["architecture"] for r in records}) >= MIN_ARCHITECTURES
    assert len({r["model"] for r in records if r["moe"]}) >= MIN_MOE_MODELS
    assert {r["regime"] for r in records} == REGIMES
    # MoE training with expert parallelism, FP8 training, and latency percentiles under load.
    assert any(r["regime"] == "moe_training" and r["config"].get("ep", 1) > 1 for r in records)
    assert any(r["regime"] == "fp8_training" for r in records)
    assert any(
        r["regime"] == "server_ttft_under_load"
        and any(m["name"] == "ttft_p99_ms" for m in r["metrics"])
        for r in records
    )
    for split in SPLITS:
        assert sum(r["split"] == split for r in records) >= len(records) // 3, split


def test_readme_coverage_is_current():
    assert _readme_block() == coverage_block(_doc()), (
        "README coverage is stale; regenerate with "
        "`python tests/validation/test_published_speed_data.py`"
    )


if __name__ == "__main__":
    text = README.read_text(encoding="utf-8")
    start, end = text.find(START), text.find(END)
    block = coverage_block(_doc())
    if start >= 0 and end > start:
        text = text[:start] + block + text[end + len(END) :]
        README.write_text(text, encoding="utf-8")
        print(f"updated {README}")
    else:
        print(block)
