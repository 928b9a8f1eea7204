"""Project: the unit a planner saves — models, custom hardware, scenarios and notes."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import Scenario


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


class Comparison(BaseModel):
    """A saved side-by-side: candidate accelerators against scenarios."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Name of the comparison.")
    accelerators: tuple[str, ...] = Field((), description="Candidate accelerator ids.")
    scenarios: tuple[str, ...] = Field((), description="Scenario names compared.")


class Project(BaseModel):
    """Everything a planner keeps in one project file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = Field(1, description="Format version of this payload.")
    name: str = Field("Untitled project", min_length=1, description="Project name, shown in the title bar.")
    author: str = Field("", description="Who prepared the sizing (shown on report covers).")
    created: dt.datetime = Field(default_factory=_now, description="When the project was created (UTC).")
    modified: dt.datetime = Field(default_factory=_now, description="When the project was last changed (UTC).")
    models: dict[str, ModelArchitecture] = Field(
        default_factory=dict, description="Imported and custom models, by id."
    )
    accelerators: dict[str, Accelerator] = Field(
        default_factory=dict, description="Custom accelerators, by id (override the catalog)."
    )
    scenarios: tuple[Scenario, ...] = Field((), description="Scenarios, in the user's order.")
    comparisons: tuple[Comparison, ...] = Field((), description="Saved comparisons.")
    notes: str = Field("", description="Free-text notes.")

    @model_validator(mode="after")
    def _unique_names(self) -> Project:
        seen: set[str] = set()
        for scenario in self.scenarios:
            if scenario.name in seen:
                raise ValueError(f"scenarios: two scenarios are named '{scenario.name}'")
            seen.add(scenario.name)
        return self

    def scenario(self, name: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        known = ", ".join(s.name for s in self.scenarios) or "none"
        raise KeyError(f"no scenario named '{name}' (scenarios: {known})")
