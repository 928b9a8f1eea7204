"""Cached estimates: saved with the project, read back equal, ignored once their inputs change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from project_factory import sample_project

from workbench.catalog.resolve import resolve_scenario
from workbench.pluginhost import default_engine
from workbench.store import ProjectFileError, input_hash, load_estimates, open_project, save_estimates, save_project
from workbench.store.estimate_cache import estimate_from_json, estimate_to_json, plugin_versions


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    return default_engine()


def _cache(project, engine) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    versions = plugin_versions(engine)
    entries = {}
    for scenario in project.scenarios:
        resolved = resolve_scenario(scenario, project)
        entries[scenario.name] = (input_hash(scenario, project, versions), estimate_to_json(engine.run(resolved)))
    return entries


def test_round_trip_through_the_project_file(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    project = sample_project(3)
    path = tmp_path / "p.gpuwb"
    entries = _cache(project, engine)
    save_project(project, path, estimates=entries)
    assert load_estimates(path) == entries
    assert open_project(path) == project.model_copy(update={"modified": open_project(path).modified})

    scenario = project.scenarios[1]
    digest, payload = load_estimates(path)[scenario.name]
    resolved = resolve_scenario(scenario, project)
    fresh = engine.run(resolved)
    cached = estimate_from_json(payload, resolved)
    assert {k: q.value for k, q in cached.values.items()} == {k: q.value for k, q in fresh.values.items()}
    assert cached.values["memory.per_gpu.total"].formula == fresh.values["memory.per_gpu.total"].formula
    assert [w.as_dict() for w in cached.warnings] == [w.as_dict() for w in fresh.warnings]
    assert cached.to_json() == fresh.to_json()  # the cached estimate reads exactly like the computed one


def test_a_changed_input_or_plugin_changes_the_hash(engine) -> None:  # type: ignore[no-untyped-def]
    project = sample_project(1)
    scenario = project.scenarios[0]
    versions = plugin_versions(engine)
    base = input_hash(scenario, project, versions)
    assert input_hash(scenario, project, versions) == base  # stable
    assert input_hash(scenario.model_copy(update={"batch_size": 64}), project, versions) != base
    assert input_hash(scenario, project, {**versions, "memory.stack": "9.9.9"}) != base
    faster = project.accelerators["my-h100-cloud"].model_copy(update={"memory_bandwidth_gbps": 4000})
    on_custom = scenario.model_copy(update={"gpu": "my-h100-cloud"})
    edited = project.model_copy(update={"accelerators": {"my-h100-cloud": faster}})
    assert input_hash(on_custom, project, versions) != input_hash(on_custom, edited, versions)


def test_mismatch_means_recompute(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    """A caller reuses a stored estimate only when its hash equals the current inputs' hash."""
    project = sample_project(2)
    path = tmp_path / "p.gpuwb"
    save_project(project, path, estimates=_cache(project, engine))
    versions = plugin_versions(engine)
    edited = project.scenarios[0].model_copy(update={"batch_size": 99})
    project = project.model_copy(update={"scenarios": (edited, project.scenarios[1])})

    stored = load_estimates(path)
    reused, recomputed = [], []
    for scenario in project.scenarios:
        digest, payload = stored[scenario.name]
        if digest == input_hash(scenario, project, versions):
            reused.append(scenario.name)
        else:
            recomputed.append(scenario.name)
            fresh = engine.run(resolve_scenario(scenario, project))
            assert json.loads(payload)["scenario"]["batch_size"] == 1  # what was stored is the old input
            assert fresh.resolved.scenario.batch_size == 99
    assert reused == ["scenario 1"] and recomputed == ["scenario 0"]


def test_save_estimates_keeps_the_project_and_drops_unknown_scenarios(tmp_path: Path, engine) -> None:  # type: ignore[no-untyped-def]
    project = sample_project(2)
    path = tmp_path / "p.gpuwb"
    saved = save_project(project, path)
    assert load_estimates(path) == {}
    entries = _cache(project, engine)
    save_estimates(path, {**entries, "no such scenario": ("x", "{}")})
    assert load_estimates(path) == entries
    assert open_project(path) == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.gpuwb"]  # atomic: no temp file left


def test_a_damaged_cache_entry_is_a_value_error(engine) -> None:  # type: ignore[no-untyped-def]
    project = sample_project(1)
    resolved = resolve_scenario(project.scenarios[0], project)
    for junk in ("not json", "{}", '{"explain": {"x": {}}}'):
        with pytest.raises(ValueError):
            estimate_from_json(junk, resolved)


def test_damaged_files_are_refused_and_untouched(tmp_path: Path) -> None:
    junk = tmp_path / "junk.gpuwb"
    junk.write_bytes(b"not a project" * 100)
    with pytest.raises(ProjectFileError, match="not a workbench project"):
        load_estimates(junk)
    with pytest.raises(ProjectFileError):
        save_estimates(junk, {})
    assert junk.read_bytes() == b"not a project" * 100
