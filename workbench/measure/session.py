"""Calibrating a project's measurements: group by GPU + engine, build the fit cases, keep profiles.

Predictions are made from the scenario stored with each measurement (the project scenario with
what the file stated filled in), resolved against the project, so a model or GPU the project
defines itself is used as it was at import.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.engine.pipeline import Engine
from workbench.measure.calibrate import Case, Fit, Progress, calibrate
from workbench.measure.predict import comparable
from workbench.measure.profile import CalibrationProfile, check_profile, profile_from_fit, scenario_engine
from workbench.measure.stored import StoredMeasurement


def groups(measurements: Sequence[StoredMeasurement]) -> dict[tuple[str, str], list[StoredMeasurement]]:
    out: dict[tuple[str, str], list[StoredMeasurement]] = defaultdict(list)
    for m in measurements:
        out[(m.scenario.gpu, scenario_engine(m.scenario))].append(m)
    return dict(out)


def pick_group(measurements: Sequence[StoredMeasurement], gpu: str | None, engine: str | None
               ) -> tuple[tuple[str, str], list[StoredMeasurement]]:
    """The one GPU + engine group to calibrate; a choice is needed when there are several."""
    found = {k: v for k, v in groups(measurements).items()
             if (gpu is None or k[0] == gpu) and (engine is None or k[1] == engine)}
    if not found:
        have = ", ".join(f"{g}/{e} ({len(v)})" for (g, e), v in sorted(groups(measurements).items())) or "none"
        raise InputError(f"calibrate: no measurements of {gpu or 'any GPU'} / {engine or 'any engine'} "
                         f"(the project has: {have})")
    if len(found) > 1:
        have = ", ".join(f"{g}/{e} ({len(v)})" for (g, e), v in sorted(found.items()))
        raise InputError(f"calibrate: measurements of several GPUs or engines ({have}); choose one with --gpu and --engine")
    return next(iter(found.items()))


def cases_for(measurements: Sequence[StoredMeasurement], project: Project | None) -> list[Case]:
    from workbench.catalog.resolve import resolve_scenario

    cases = []
    for m in measurements:
        try:
            resolved = resolve_scenario(m.scenario, project)
        except InputError as exc:
            raise InputError(f"calibrate: measurement {m.id}: {exc}") from None
        metrics = dict(m.measurement.metrics)
        cases.append(Case(f"#{m.id} {m.measurement.file_name} {m.measurement.record}".strip(), resolved, metrics,
                          comparable(metrics, resolved)))
    return cases


def run_calibration(engine: Engine, measurements: Sequence[StoredMeasurement], project: Project | None, *,
                    gpu: str | None = None, engine_name: str | None = None, name: str | None = None,
                    progress: Progress | None = None) -> tuple[CalibrationProfile, Fit]:
    (gpu_id, engine_id), chosen = pick_group(measurements, gpu, engine_name)
    fit = calibrate(engine, cases_for(chosen, project), progress=progress)
    profile = profile_from_fit(fit, gpu=gpu_id, engine=engine_id, measurements=len(chosen), name=name)
    return profile, fit


# --- profiles in the project --------------------------------------------------------------------


def load_profiles(path: str | Path, definitions: Mapping) -> tuple[dict[str, CalibrationProfile], list[str]]:
    """The project's profiles by name; a damaged row is skipped with one line saying so."""
    from pydantic import ValidationError

    from workbench.store.measurements import read_rows

    profiles: dict[str, CalibrationProfile] = {}
    skipped: list[str] = []
    for row in read_rows(path, "calibrations"):
        try:
            payload = row.get("payload_json")
            if not isinstance(payload, str):
                raise ValueError("payload is not JSON text")
            profile = CalibrationProfile.model_validate_json(payload)
            check_profile(profile, f"calibration {profile.name}", definitions)
        except (ValidationError, ValueError, InputError) as exc:
            skipped.append(f"calibration {row.get('name')!r}: {str(exc).splitlines()[0][:80]}")
            continue
        profiles[profile.name] = profile
    return profiles, skipped


def save_profile(path: str | Path, profile: CalibrationProfile, *, lock_held: bool = False) -> None:
    from workbench.store.measurements import put_calibration_row

    put_calibration_row(path, {"name": profile.name, "created": profile.created.isoformat(), "schema_version": 1,
                               "payload_json": profile.model_dump_json()}, lock_held=lock_held)
