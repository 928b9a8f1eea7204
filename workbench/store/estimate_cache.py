"""Estimates kept in the project file as derived data: reused while their inputs match.

Each stored estimate carries a hash of everything it was computed from: the scenario, the
resolved model, accelerator and node shape, the workbench version and the estimator versions. An
edited scenario, a corrected catalog entry or an upgraded plugin gives another hash, and the
stored estimate is ignored and recomputed: a cached number can be stale only if the hash lies.

The JSON is :meth:`Estimate.to_json` (the documented ``estimate --json`` contract, explanations
included), so a cached estimate reads back with its formulas, assumptions and warnings.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from workbench import __version__
from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.assumptions import Assumption, AssumptionSet
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import EstimatorFailure, Quantity
from workbench.engine.quantity import Warning as EstimateWarning
from workbench.store.lock import writing
from workbench.store.project_file import ProjectFileError, load_database, open_project, save_project

#: scenario name -> (input hash, estimate JSON)
CachedEstimates = dict[str, tuple[str, str]]


def plugin_versions(engine: Engine) -> dict[str, str]:
    """The estimators an engine runs, with their versions: part of every input hash."""
    return {est.info.id: est.info.version for est in engine.estimators}


def input_hash(scenario: Scenario, project: Project | None = None,
               plugin_versions: Mapping[str, str] | None = None, *,
               resolved: ResolvedScenario | None = None) -> str:
    """sha256 over what an estimate of ``scenario`` depends on.

    ``resolved`` saves a catalog lookup when the caller has one (it must resolve ``scenario``);
    otherwise the scenario is resolved against ``project`` and the catalogs, and an unknown
    model or GPU raises as it would when estimating.
    """
    if resolved is None:
        from workbench.catalog.resolve import resolve_scenario

        resolved = resolve_scenario(scenario, project)
    document = {
        "scenario": scenario.model_dump(mode="json"),
        "model": resolved.model.model_dump(mode="json"),
        "accelerator": resolved.cluster.accelerator.model_dump(mode="json"),
        "node": resolved.cluster.node.model_dump(mode="json"),
        "num_gpus": resolved.cluster.num_gpus,
        "app_version": __version__,
        "plugins": dict(sorted((plugin_versions or {}).items())),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def estimate_to_json(estimate: Estimate) -> str:
    return json.dumps(estimate.to_json(explain=True), separators=(",", ":"))


def estimate_from_json(text: str, resolved: ResolvedScenario) -> Estimate:
    """Rebuild an :class:`Estimate` from :func:`estimate_to_json`; ValueError if it is not one."""
    try:
        doc = json.loads(text)
        values = {key: _quantity(item) for key, item in doc["explain"].items()}
        used = doc.get("assumptions", [])
        definitions = {
            a["id"]: Assumption(a["id"], a["title"], a["default"], a.get("unit", ""), a.get("source", ""))
            for a in used
        }
        overrides = {a["id"]: a["value"] for a in used if a.get("overridden")}
        assumptions = AssumptionSet(definitions, overrides)
        assumptions.used = set(definitions)
        warnings = [EstimateWarning(w["code"], w["message"], w.get("severity", "warning"), w.get("fix", ""))
                    for w in doc.get("warnings", [])]
        failures = [EstimatorFailure(f["estimator"], f["message"]) for f in doc.get("errors", [])]
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a cached estimate ({type(exc).__name__}: {exc})") from None
    return Estimate(resolved, values, assumptions, warnings, failures)


def _quantity(item: dict[str, Any]) -> Quantity:
    return Quantity(item["value"], item.get("unit", ""), item.get("label", ""), item.get("formula") or None,
                    tuple(item.get("assumptions", ())), item.get("note", ""))


def load_estimates(path: str | Path) -> CachedEstimates:
    """The cached estimates of a project file (never writes; a bad file raises ProjectFileError).

    The cache is derived data: an entry whose values are not text is skipped (recomputed), not
    a reason to refuse the project.
    """
    conn = load_database(path)
    try:
        rows = Database(conn)["estimates"].rows
        return {row["scenario"]: (row["input_hash"], row["payload_json"]) for row in rows
                if all(isinstance(row[k], str) for k in ("scenario", "input_hash", "payload_json"))}
    except sqlite3.DatabaseError as exc:
        raise ProjectFileError(f"cannot open project {path}: damaged project file ({exc})") from None
    finally:
        conn.close()


def save_estimates(path: str | Path, estimates: Mapping[str, tuple[str, str]]) -> None:
    """Replace the cached estimates of a project file, atomically (the project is rewritten as is).

    The window writes estimates as part of its save (``save_project(..., estimates=...)``); this
    is for tools that add estimates to a file they did not otherwise change.
    """
    with writing(path):  # another writer's edit between the read and the save would be lost
        save_project(open_project(path), path, touch=False, estimates=estimates)


__all__ = ["CachedEstimates", "estimate_from_json", "estimate_to_json", "input_hash", "load_estimates",
           "plugin_versions", "save_estimates"]
