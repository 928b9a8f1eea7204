"""The shipped catalogs, read once when the window opens, and a resolver that uses them.

``workbench.catalog.resolve.resolve_scenario`` re-reads the user's catalog folder on every call;
the window resolves on every edit, so it keeps the catalogs in memory and only falls back to the
catalog module for references it does not hold (a ``config.json`` path).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from workbench.catalog.accelerators import default_node_for, load_accelerators, load_node_shapes
from workbench.catalog.resolve import resolve_model_ref
from workbench.core.errors import CatalogError, WorkbenchError
from workbench.core.hardware import Accelerator, Cluster, NodeShape
from workbench.core.model import ModelArchitecture
from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CatalogModelEntry:
    """A model the catalog list shows: id, architecture and where it comes from."""

    id: str
    architecture: ModelArchitecture
    origin: str  # "catalog" or a Hugging Face repo / file


@dataclass
class Catalogs:
    accelerators: dict[str, Accelerator] = field(default_factory=dict)
    nodes: dict[str, NodeShape] = field(default_factory=dict)
    models: dict[str, CatalogModelEntry] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls) -> Catalogs:
        """Read every catalog; a broken one is reported in ``problems``, never raised."""
        catalogs = cls()
        try:
            catalogs.accelerators = load_accelerators()
        except WorkbenchError as exc:
            catalogs.problems.append(f"Accelerator catalog: {exc}")
        try:
            catalogs.nodes = load_node_shapes()
        except WorkbenchError as exc:
            catalogs.problems.append(f"Node shapes: {exc}")
        try:
            from workbench.catalog.models import load_model_catalog

            for entry in load_model_catalog().values():
                catalogs.models[entry.id] = CatalogModelEntry(entry.id, entry.architecture, entry.hf_repo or "catalog")
        except WorkbenchError as exc:
            catalogs.problems.append(f"Model catalog: {exc}")
        for problem in catalogs.problems:
            log.warning(problem)
        return catalogs

    # --- lookups (project first: a project's own entries override the catalog) ------------------

    def accelerator(self, ref: str, project: Project | None = None) -> Accelerator:
        if project is not None and ref in project.accelerators:
            return project.accelerators[ref]
        found = self.accelerators.get(ref)
        if found is None:
            raise CatalogError(f"unknown GPU id '{ref}'")
        return found

    def model(self, ref: str, project: Project | None = None) -> ModelArchitecture:
        if project is not None and ref in project.models:
            return project.models[ref]
        entry = self.models.get(ref)
        if entry is not None:
            return entry.architecture
        return resolve_model_ref(ref, project)

    def node_for(self, scenario: Scenario, accelerator: Accelerator) -> NodeShape:
        if scenario.node is not None:
            node = self.nodes.get(scenario.node)
            if node is None:
                raise CatalogError(f"unknown node shape '{scenario.node}'")
            return node
        return default_node_for(accelerator, self.nodes)

    def resolve(self, scenario: Scenario, project: Project | None = None) -> ResolvedScenario:
        accelerator = self.accelerator(scenario.gpu, project)
        cluster = Cluster(accelerator=accelerator, node=self.node_for(scenario, accelerator), num_gpus=scenario.num_gpus)
        return ResolvedScenario(scenario=scenario, model=self.model(scenario.model, project), cluster=cluster)

    def all_accelerators(self, project: Project | None = None) -> list[Accelerator]:
        """Catalog accelerators with the project's custom ones replacing or joining them."""
        merged = dict(self.accelerators)
        if project is not None:
            merged.update(project.accelerators)
        return list(merged.values())
