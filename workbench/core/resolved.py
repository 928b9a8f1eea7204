"""A scenario with its model and hardware looked up: the engine's input."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.hardware import Cluster
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import Scenario


@dataclass(frozen=True, slots=True)
class ResolvedScenario:
    scenario: Scenario
    model: ModelArchitecture
    cluster: Cluster

    def with_scenario(self, scenario: Scenario) -> ResolvedScenario:
        """Same model and accelerator, another scenario (sweeps and solvers); GPU count follows."""
        cluster = self.cluster
        if scenario.num_gpus != cluster.num_gpus:
            cluster = cluster.model_copy(update={"num_gpus": scenario.num_gpus})
        return ResolvedScenario(scenario, self.model, cluster)
