"""Project: the unit a planner saves — models, custom hardware, scenarios and notes."""

from __future__ import annotations

import datetime as dt
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, model_validator

from workbench.core import limits
from workbench.core.dtypes import WeightFormat
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import Scenario


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


class Comparison(BaseModel):
    """A saved side-by-side: candidate accelerators against scenarios."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, max_length=limits.MAX_NAME_CHARS, description="Name of the comparison.")
    accelerators: tuple[str, ...] = Field((), description="Candidate accelerator ids.")
    scenarios: tuple[str, ...] = Field(
        (), description="Scenario names compared (none: the scenario selected in the window)."
    )
    max_ttft_s: float | None = Field(None, gt=0, description="Target: time to first token at most this (s).")
    max_tpot_s: float | None = Field(None, gt=0, description="Target: time per output token at most this (s).")
    min_tokens_per_s: float | None = Field(None, gt=0, description="Target: throughput at least this (tokens/s).")
    deadline_days: float | None = Field(None, gt=0, description="Target: training finishes within this (days).")
    budget_usd: float | None = Field(None, gt=0, description="Target: spend at most this (USD).")
    usd_per_gpu_hour: dict[str, PositiveFloat] = Field(
        default_factory=dict,
        description="Rental price per GPU-hour (USD) entered for a candidate, by accelerator id; a candidate "
        "not listed uses the catalog's price (or the scenario's, for the scenario's own GPU).",
    )
    budget_basis: Literal["auto", "run", "tco", "capex"] = Field(
        "auto",
        description="What the budget pays for: the training run, the cheaper of buying and renting, or "
        "buying (auto: the run for training with tokens to train on, else buy-or-rent).",
    )
    confidence_draws: int = Field(
        0, ge=0, le=100_000, description="Draws of the ranking's decision confidence (0: not computed)."
    )
    iso_sla: bool = Field(False, description="Compare at equal service level (the Compare tab's page is on).")
    iso_sla_weights: tuple[WeightFormat, ...] = Field(
        (), description="Weight precisions the equal-service-level search may choose (none: the scenario's own)."
    )
    iso_sla_confidence_draws: int = Field(
        0, ge=0, le=100_000, description="Draws of the confidence at equal service level (0: not computed)."
    )

    #: The target fields, named as ``workbench.engine.compare.Targets`` names them.
    TARGET_FIELDS: ClassVar[tuple[str, ...]] = (
        "max_ttft_s", "max_tpot_s", "min_tokens_per_s", "deadline_days", "budget_usd", "budget_basis",
    )


class Project(BaseModel):
    """Everything a planner keeps in one project file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = Field(1, description="Format version of this payload.")
    name: str = Field("Untitled project", min_length=1, max_length=limits.MAX_NAME_CHARS, description="Project name, shown in the title bar.")
    author: str = Field("", max_length=limits.MAX_NAME_CHARS, description="Who prepared the sizing (shown on report covers).")
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
    current_scenario: str = Field(
        "",
        max_length=limits.MAX_NAME_CHARS,
        description="The scenario selected when the project was saved; reopening selects it again "
        "(empty, or a name no scenario has: the first scenario).",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> Project:
        seen: set[str] = set()
        for scenario in self.scenarios:
            if scenario.name in seen:
                raise ValueError(f"scenarios: two scenarios are named '{scenario.name}'")
            seen.add(scenario.name)
        named: set[str] = set()
        for comparison in self.comparisons:
            if comparison.name in named:
                raise ValueError(f"comparisons: two comparisons are named '{comparison.name}'")
            named.add(comparison.name)
        return self

    def scenario(self, name: str) -> Scenario:
        for scenario in self.scenarios:
            if scenario.name == name:
                return scenario
        known = ", ".join(s.name for s in self.scenarios) or "none"
        raise KeyError(f"no scenario named '{name}' (scenarios: {known})")
