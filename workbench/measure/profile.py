"""Calibration profiles: the fitted assumption values of one GPU + engine, with the evidence.

A profile is saved in the project (table ``calibrations``) and can be written to and read from a
YAML file to share. Applying one to a scenario adds its values as assumption overrides (the
scenario's own overrides win: a user's explicit value is never replaced) and marks the estimate
"calibrated on N measurements (date)".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.core.errors import InputError, describe_validation_error
from workbench.core.scenario import Scenario, Workload
from workbench.engine.assumptions import Assumption, check_overrides
from workbench.measure.calibrate import Fit

KIND = "gpu-workbench-calibration"
MAX_PROFILE_BYTES = 4 * 1024 * 1024


class CalibrationProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["gpu-workbench-calibration"] = Field(KIND, description="Marks a calibration profile file.")
    schema_version: Literal[1] = Field(1, description="Format version of this profile.")
    name: str = Field(min_length=1, max_length=200, description="Profile name (default GPU/engine).")
    gpu: str = Field(min_length=1, max_length=200, description="Accelerator id the measurements ran on.")
    engine: str = Field(min_length=1, max_length=100, description="Serving engine or trainer of the measurements.")
    created: dt.datetime = Field(description="When the fit was made (UTC).")
    measurements: int = Field(gt=0, description="How many measurements the fit used.")
    assumptions: dict[str, float] = Field(description="Fitted values of the assumptions that moved.")
    parameters: list[dict[str, Any]] = Field(default_factory=list, description="Every fitted assumption: default, range, value.")
    fit: dict[str, float | None] = Field(default_factory=dict, description="Median absolute errors before, after and left out.")
    residuals: list[dict[str, Any]] = Field(default_factory=list, description="Per measurement and metric.")
    notes: list[str] = Field(default_factory=list, description="What was not fitted, and why.")

    def mark(self) -> str:
        return f"calibrated on {self.measurements} measurement{'s' if self.measurements != 1 else ''} " \
               f"({self.created:%Y-%m-%d})"

    def summary(self) -> dict[str, Any]:
        """What an estimate carries of the profile it was made with."""
        return {"name": self.name, "mark": self.mark(), "gpu": self.gpu, "engine": self.engine,
                "measurements": self.measurements, "created": self.created.isoformat(),
                "assumptions": dict(self.assumptions)}


def profile_from_fit(fit: Fit, *, gpu: str, engine: str, measurements: int, name: str | None = None) -> CalibrationProfile:
    return CalibrationProfile(
        name=name or f"{gpu}/{engine}",
        gpu=gpu,
        engine=engine,
        created=dt.datetime.now(dt.UTC).replace(microsecond=0),
        measurements=measurements,
        assumptions=fit.overrides,
        parameters=[p.as_dict() for p in fit.parameters],
        fit={"median_abs_error_before": fit.median_abs("before"), "median_abs_error_after": fit.median_abs("after"),
             "median_abs_error_left_out": fit.median_abs("left_out")},
        residuals=[r.as_dict() for r in fit.residuals],
        notes=list(fit.notes),
    )


def dump_yaml(profile: CalibrationProfile) -> str:
    return yaml.safe_dump(profile.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def parse_profile(text: str, source: str, definitions: Mapping[str, Assumption]) -> CalibrationProfile:
    """A profile from YAML (or JSON) text; refused in one line if it is not one or a value is out of range."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise InputError(f"{source}: not a calibration profile (expected 'kind: {KIND}')")
    try:
        profile = CalibrationProfile.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, source)) from None
    check_profile(profile, source, definitions)
    return profile


def check_profile(profile: CalibrationProfile, source: str, definitions: Mapping[str, Assumption]) -> None:
    unknown = sorted(set(profile.assumptions) - set(definitions))
    if unknown:
        raise InputError(f"{source}: assumption '{unknown[0]}' is not one this workbench's estimators read")
    try:
        check_overrides(definitions, profile.assumptions)
    except ValueError as exc:
        raise InputError(f"{source}: {exc}") from None


def read_profile_file(path: str | Path, definitions: Mapping[str, Assumption]) -> CalibrationProfile:
    file = Path(path)
    try:
        if file.stat().st_size > MAX_PROFILE_BYTES:
            raise InputError(f"{file}: larger than {MAX_PROFILE_BYTES // 2**20} MiB, not a calibration profile")
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{file}: a folder, not a calibration profile") from None
    except UnicodeDecodeError:
        raise InputError(f"{file}: not UTF-8 text") from None
    except OSError as exc:
        raise InputError(f"{file}: cannot read ({exc.strerror or exc})") from None
    return parse_profile(text, str(file), definitions)


def scenario_engine(scenario: Scenario) -> str:
    """The engine a profile is keyed by: the serving engine, or the workload for training."""
    if scenario.workload == Workload.INFERENCE:
        return scenario.serving.engine.value
    return "training"


def apply_profile(profile: CalibrationProfile, scenario: Scenario) -> Scenario:
    """``scenario`` with the profile's values as overrides; refused for another GPU or engine."""
    if scenario.gpu != profile.gpu:
        raise InputError(f"calibration '{profile.name}' was fitted on {profile.gpu}; scenario '{scenario.name}' "
                         f"uses {scenario.gpu}")
    engine = scenario_engine(scenario)
    if engine != profile.engine:
        raise InputError(f"calibration '{profile.name}' was fitted for {profile.engine}; scenario "
                         f"'{scenario.name}' runs {engine}")
    return scenario.model_copy(update={"assumptions": {**profile.assumptions, **scenario.assumptions}})


def fitted_for(profile: CalibrationProfile, scenario: Scenario) -> bool:
    """Whether ``scenario`` runs on the GPU and engine the profile was fitted on."""
    return scenario.gpu == profile.gpu and scenario_engine(scenario) == profile.engine


def apply_where_fitted(profile: CalibrationProfile, scenario: Scenario) -> Scenario:
    """``scenario`` calibrated when it runs on the profile's GPU and engine, else unchanged: a
    comparison of several accelerators calibrates only the candidate the measurements ran on."""
    return apply_profile(profile, scenario) if fitted_for(profile, scenario) else scenario
