"""The latest estimate of each scenario with the hash of its inputs: the project file's cache.

Opening a project reads the cached estimates saved with it; each estimate the window computes
replaces its scenario's entry; saving writes the entries whose hash still matches. An entry is
used only while its hash equals the hash of the scenario's current inputs (scenario, resolved
model and GPU, app and estimator versions): anything else is recomputed. The store (sqlite-utils)
is imported on first use, off the window's start-up path.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.gui.catalogs import Catalogs

log = logging.getLogger(__name__)


@dataclass
class _Entry:
    digest: str
    estimate: Estimate | None = None  # built from ``payload`` on first use
    payload: str | None = None  # written on first save


class KnownEstimates:
    def __init__(self, catalogs: Catalogs) -> None:
        self.catalogs = catalogs
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def replace(self, stored: Mapping[str, tuple[str, str]]) -> None:
        """Forget everything; keep what a project file holds (hash, JSON) by scenario name."""
        self._entries = {name: _Entry(digest, payload=payload) for name, (digest, payload) in stored.items()}

    def clear(self) -> None:
        self._entries = {}

    def remember(self, resolved: ResolvedScenario, estimate: Estimate, versions: Mapping[str, str]) -> None:
        from workbench.store.estimate_cache import input_hash

        scenario = resolved.scenario
        self._entries[scenario.name] = _Entry(input_hash(scenario, None, versions, resolved=resolved), estimate)

    def _resolve(self, scenario: Scenario, project: Project) -> ResolvedScenario | None:
        try:
            return self.catalogs.resolve(scenario, project)
        except Exception:  # noqa: BLE001 - an unresolvable scenario has no cached estimate
            return None

    def lookup(self, scenario: Scenario, project: Project,
               versions: Mapping[str, str]) -> tuple[ResolvedScenario, Estimate] | None:
        """The scenario resolved and its estimate, if one is known for exactly these inputs."""
        from workbench.store.estimate_cache import estimate_from_json, input_hash

        entry = self._entries.get(scenario.name)
        if entry is None:
            return None
        resolved = self._resolve(scenario, project)
        if resolved is None or input_hash(scenario, project, versions, resolved=resolved) != entry.digest:
            return None
        if entry.estimate is None:
            try:
                entry.estimate = estimate_from_json(entry.payload or "", resolved)
            except ValueError as exc:
                log.warning("cached estimate of %r ignored: %s", scenario.name, exc)
                del self._entries[scenario.name]
                return None
        return resolved, entry.estimate

    def for_save(self, project: Project, versions: Mapping[str, str] | None) -> dict[str, tuple[str, str]]:
        """(hash, JSON) of each scenario of ``project`` whose known estimate matches its inputs."""
        from workbench.store.estimate_cache import estimate_to_json, input_hash

        if versions is None:
            return {}
        stored: dict[str, tuple[str, str]] = {}
        for scenario in project.scenarios:
            entry = self._entries.get(scenario.name)
            resolved = self._resolve(scenario, project) if entry is not None else None
            if entry is None or resolved is None:
                continue
            if input_hash(scenario, project, versions, resolved=resolved) != entry.digest:
                continue
            if entry.payload is None and entry.estimate is not None:
                entry.payload = estimate_to_json(entry.estimate)
            if entry.payload is not None:
                stored[scenario.name] = (entry.digest, entry.payload)
        return stored
