"""Measurements as a project keeps them: the measurement, the scenario it is compared with, and
the name of the project scenario it belongs to.

A damaged row (payload not JSON, a field of the wrong type, a newer payload version) is skipped
and counted, never a reason to refuse the project: the measurement can be imported again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.measure.model import METRICS, Measurement
from workbench.measure.scenario_match import check_resolves, scenario_for

PAYLOAD_VERSION = 1


class MeasurementPayload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    measurement: Measurement = Field(description="What the result file states and measured.")
    scenario: Scenario = Field(description="The scenario the measurement is compared with.")


@dataclass(frozen=True, slots=True)
class StoredMeasurement:
    id: int
    scenario_name: str
    imported: str
    measurement: Measurement
    scenario: Scenario

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "scenario_name": self.scenario_name,
            "imported": self.imported,
            "measurement": self.measurement.model_dump(mode="json"),
            "metric_units": {key: METRICS[key].unit for key in self.measurement.metrics},
            "scenario": self.scenario.model_dump(mode="json"),
        }


def to_row(scenario_name: str, measurement: Measurement, scenario: Scenario, imported: str) -> dict[str, Any]:
    payload = MeasurementPayload(measurement=measurement, scenario=scenario)
    return {
        "scenario": scenario_name,
        "source_format": measurement.source_format,
        "file_name": measurement.file_name,
        "imported": imported,
        "schema_version": PAYLOAD_VERSION,
        "payload_json": payload.model_dump_json(),
    }


def from_rows(rows: list[dict[str, Any]]) -> tuple[list[StoredMeasurement], list[str]]:
    """The rows that read back, and one line for each that did not."""
    good: list[StoredMeasurement] = []
    skipped: list[str] = []
    for row in rows:
        ident = row.get("id")
        try:
            if not isinstance(ident, int) or not isinstance(row.get("scenario"), str):
                raise ValueError("id or scenario missing")
            if row.get("schema_version") != PAYLOAD_VERSION:
                raise ValueError(f"payload version {row.get('schema_version')!r}")
            payload = row.get("payload_json")
            if not isinstance(payload, str):
                raise ValueError("payload is not JSON text")
            parsed = MeasurementPayload.model_validate_json(payload)
        except (ValidationError, ValueError, json.JSONDecodeError) as exc:
            first = str(exc).splitlines()[0][:80]
            skipped.append(f"measurement {ident!r}: {first}")
            continue
        good.append(StoredMeasurement(ident, row["scenario"], str(row.get("imported") or ""),
                                      parsed.measurement, parsed.scenario))
    good.sort(key=lambda m: m.id)
    return good, skipped


def load_measurements(project_path: str | Path) -> tuple[list[StoredMeasurement], list[str]]:
    from workbench.store.measurements import read_rows

    return from_rows(read_rows(project_path, "measurements"))


def prepare_import(measurements: list[Measurement], base: Scenario, project: Project | None
                   ) -> list[tuple[Measurement, Scenario]]:
    """Tie each measurement of a file to ``base``: every check runs before anything is stored, so
    a bad record anywhere refuses the whole file."""
    prepared = []
    for measurement in measurements:
        scenario = scenario_for(measurement, base, project)
        check_resolves(scenario, project, f"{measurement.file_name} {measurement.record}".strip())
        prepared.append((measurement, scenario))
    return prepared


def store_import(project_path: str | Path, scenario_name: str, prepared: list[tuple[Measurement, Scenario]],
                 edit: Callable[[Project], Project] | None = None, *, lock_held: bool = False) -> list[int]:
    """Store the measurements (and ``edit`` the project, e.g. to add their scenario) in one save."""
    from workbench.store.measurements import add_measurement_rows

    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    return add_measurement_rows(project_path, [to_row(scenario_name, m, s, now) for m, s in prepared], edit,
                                lock_held=lock_held)


def prepare_files(paths: list[str | Path], base: Scenario, project: Project | None
                  ) -> list[tuple[Measurement, Scenario]]:
    """Read and tie every file's measurements to ``base``; the first bad file refuses them all
    (its reader's one line, naming the file), so a batch of files is imported whole or not at all."""
    from workbench.measure.readers import read_measurements

    prepared: list[tuple[Measurement, Scenario]] = []
    for path in paths:
        prepared += prepare_import(read_measurements(path), base, project)
    return prepared
