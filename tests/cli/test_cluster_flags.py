"""Cluster options: the storage catalog, the scenario fields and their payload versions, and the CLI
flags (a storage id the catalog lacks is a one-line usage error; the keys reach --json and --explain)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.errors import CatalogError
from workbench.core.scenario import SCENARIO_PAYLOAD_NEWEST, ClusterOptions, Scenario
from workbench.engine.storage_catalog import StorageKind, _load, default_storage_id, storage_systems

BASE = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "16", "--workload", "pretrain",
        "--zero", "1", "--train-tokens", "1e12"]  # fmt: skip


def test_every_storage_entry_has_a_dated_source() -> None:
    systems = storage_systems()
    assert default_storage_id() in systems
    assert {s.kind for s in systems.values()} == set(StorageKind)  # local, shared and object stores
    for s in systems.values():
        assert s.source.url and s.source.url.startswith("https://"), s.id
        assert isinstance(s.source.retrieved, dt.date)
        assert s.read_gbps > 0 and s.write_gbps > 0 and s.count > 0


def test_a_broken_storage_catalog_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "storage.yaml"
    bad.write_text("storage:\n  - id: x\n    name: X\n    kind: tape\n")
    with pytest.raises(CatalogError, match="storage x: kind"):
        _load(bad)
    bad.write_text("storage: [\n")
    with pytest.raises(CatalogError, match="not valid YAML"):
        _load(tmp_path / "storage.yaml")


def test_cluster_options_at_their_defaults_stay_out_of_the_payload() -> None:
    plain = Scenario(model="llama-3.1-8b", gpu="h100-sxm")
    assert "cluster" not in plain.model_dump(mode="json")
    assert plain.payload_version == 1
    # a payload written before the options existed still reads, with the defaults
    assert Scenario.model_validate_json(plain.model_dump_json()).cluster == ClusterOptions()
    spot = Scenario(model="llama-3.1-8b", gpu="h100-sxm", cluster={"spot": True, "storage": "s3-standard"})
    assert spot.payload_version == SCENARIO_PAYLOAD_NEWEST == 3
    assert Scenario.model_validate_json(spot.model_dump_json()) == spot
    served = Scenario(model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": "vllm"})
    assert served.payload_version == 2  # as before


def test_flags_set_the_cluster_options_and_the_keys_reach_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*BASE, "--storage", "nvme-gen4-pm9a3", "--storage-count", "4", "--async-checkpoint", "--spot",
                 "--checkpoint-interval", "1800", "--dataset-format", "text", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    options = doc["scenario"]["cluster"]
    assert options["storage"] == "nvme-gen4-pm9a3" and options["storage_count"] == 4
    assert options["async_checkpoint"] is True and options["spot"] is True
    assert options["dataset_format"] == "text"
    assert doc["cluster"]["checkpoint"]["interval_s"] == 1800
    assert doc["cluster"]["storage"]["read_gbps"] == pytest.approx(6.5 * 4 * 2)  # 2 nodes of 8 GPUs
    assert doc["explain"]["cluster.goodput"]["formula"].startswith("useful / wall")
    # the H100's catalog spot price sets the discount (no assumed one)
    assert "catalog spot/on-demand" in doc["explain"]["cluster.goodput_usd"]["formula"]


def test_explain_shows_the_cluster_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "key: cluster.checkpoint.bytes" in out and "Young/Daly: sqrt(2 x MTBF" in out


def test_an_unknown_storage_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--storage", "floppy"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "unknown storage 'floppy'" in err


def test_catalog_storage_lists_every_entry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog", "storage", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["count"] == len(storage_systems()) and doc["default"] == default_storage_id()


def test_a_project_keeps_the_cluster_options_and_names_their_version(tmp_path: Path) -> None:
    import sqlite3

    from workbench.core.project import Project
    from workbench.store import open_project, save_project

    plain = Scenario(name="a", model="llama-3.1-8b", gpu="h100-sxm")
    spot = Scenario(name="b", model="llama-3.1-8b", gpu="h100-sxm", cluster={"spot": True, "storage_gbps": 40})
    path = tmp_path / "p.gpuwb"
    save_project(Project(scenarios=(plain, spot)), path)
    with sqlite3.connect(path) as conn:
        versions = dict(conn.execute("select name, schema_version from scenarios"))
    conn.close()
    assert versions == {"a": 1, "b": 3}
    assert open_project(path).scenarios == (plain, spot)
