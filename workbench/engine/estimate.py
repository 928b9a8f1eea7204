"""The result of one estimate: every number with its explanation, warnings and failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.core.resolved import ResolvedScenario
from workbench.engine.assumptions import AssumptionSet
from workbench.engine.points import PointQuantities
from workbench.engine.quantity import EstimatorFailure, Quantity, Value, Warning


@dataclass(slots=True)
class Estimate:
    resolved: ResolvedScenario
    values: dict[str, Quantity]
    assumptions: AssumptionSet
    warnings: list[Warning] = field(default_factory=list)
    failures: list[EstimatorFailure] = field(default_factory=list)

    def get(self, key: str, default: Value = None) -> Value:
        values = self.values
        if type(values) is PointQuantities:  # a point group's lazy quantities: the value, no Quantity built
            found = values.value(key)
            return default if found is None else found
        quantity = values.get(key)
        return default if quantity is None else quantity.value

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def assumptions_used(self) -> list[dict[str, Any]]:
        rows = []
        for ident in sorted(self.assumptions.used):
            definition = self.assumptions.definition(ident)
            rows.append(
                {
                    "id": ident,
                    "title": definition.title,
                    "value": self.assumptions[ident],
                    "default": definition.default,
                    "overridden": self.assumptions.is_overridden(ident),
                    "unit": definition.unit,
                    "source": definition.source,
                }
            )
        return rows

    def nested_values(self) -> dict[str, Any]:
        """Values as nested objects: ``memory.per_gpu.total`` -> ``{"memory": {"per_gpu": {...}}}``."""
        root: dict[str, Any] = {}
        for key, quantity in self.values.items():
            node = root
            *parents, leaf = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = quantity.value
        return root

    def to_json(self, explain: bool = True) -> dict[str, Any]:
        """The documented JSON contract (README, "estimate --json")."""
        doc = self.nested_values()
        doc["warnings"] = [w.as_dict() for w in self.warnings]
        doc["errors"] = [{"estimator": f.estimator, "message": f.message} for f in self.failures]
        doc["scenario"] = self.resolved.scenario.model_dump(mode="json")
        doc["hardware"] = {
            "accelerator": self.resolved.cluster.accelerator.id,
            "node": self.resolved.cluster.node.id,
            "num_gpus": self.resolved.cluster.num_gpus,
        }
        doc["model_name"] = self.resolved.model.name
        if explain:
            doc["explain"] = {key: q.as_dict() for key, q in self.values.items()}
            doc["assumptions"] = self.assumptions_used()
        return doc
