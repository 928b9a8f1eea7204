"""Sweeps: the cartesian product of field values, each estimated on the same engine.

Values are validated once per distinct value (not per point); models and accelerators are
resolved once per distinct id; points are plain ``model_copy`` variants of one scenario.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.variations import field_path, validated_value, with_fields

_LAYOUT_FIELDS = {"num_gpus", "parallel.tp", "parallel.pp", "parallel.dp"}


@dataclass(frozen=True, slots=True)
class Axis:
    name: str  # as the user wrote it
    path: str  # scenario field path
    values: tuple[Any, ...]  # validated


@dataclass(frozen=True, slots=True)
class SweepPoint:
    settings: dict[str, Any]  # axis name -> value
    estimate: Estimate | None
    error: str | None = None


def parse_axis(spec: str, base: Scenario) -> Axis:
    """``"batch=1,2,4"`` -> Axis; ranges ``"batch=1..64"`` double from start to end."""
    name, sep, raw = spec.partition("=")
    name = name.strip()
    if not sep or not name or not raw.strip():
        raise InputError(f"--vary: expected FIELD=V1,V2,..., got '{spec}'")
    path = field_path(name)
    items = [v.strip() for v in raw.split(",") if v.strip()]
    if len(items) == 1 and ".." in items[0]:
        items = _doubling_range(items[0], spec)
    structural = path in ("model", "gpu")
    values = tuple(items if structural else [validated_value(base, path, v) for v in items])
    return Axis(name, path, values)


def _doubling_range(text: str, spec: str) -> list[str]:
    start_text, _, end_text = text.partition("..")
    try:
        start, end = int(start_text), int(end_text)
    except ValueError:
        raise InputError(f"--vary: a range is START..END in integers, got '{spec}'") from None
    if start <= 0 or end < start:
        raise InputError(f"--vary: a range needs 0 < START <= END, got '{spec}'")
    values = []
    while start <= end:
        values.append(str(start))
        start *= 2
    return values


def run_sweep(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
) -> Iterator[SweepPoint]:
    """Estimate every combination of the axes' values, in order."""
    resolved_cache: dict[tuple[str, str, str | None], ResolvedScenario] = {}
    for combo in itertools.product(*(axis.values for axis in axes)):
        settings = {axis.name: value for axis, value in zip(axes, combo)}
        changes = {axis.path: value for axis, value in zip(axes, combo)}
        if _LAYOUT_FIELDS.intersection(changes):
            problem = _fix_layout(base, changes)
            if problem:
                yield SweepPoint(settings, None, problem)
                continue
        scenario = with_fields(base, changes)
        key = (scenario.model, scenario.gpu, scenario.node)
        try:
            anchor = resolved_cache.get(key)
            if anchor is None:
                anchor = resolved_cache[key] = resolve(scenario)
        except InputError as exc:
            yield SweepPoint(settings, None, str(exc))
            continue
        yield SweepPoint(settings, engine.run(anchor.with_scenario(scenario)))


def _fix_layout(base: Scenario, changes: dict[str, Any]) -> str | None:
    """Keep TP x PP x DP = GPUs when a sweep changes one of them (DP or GPUs absorb the rest)."""
    tp = changes.get("parallel.tp", base.parallel.tp)
    pp = changes.get("parallel.pp", base.parallel.pp)
    gpus = changes.get("num_gpus")
    if "parallel.dp" in changes:
        if gpus is None:
            changes["num_gpus"] = max(base.num_gpus, tp * pp * changes["parallel.dp"])
        elif tp * pp * changes["parallel.dp"] > gpus:
            return f"TP x PP x DP = {tp * pp * changes['parallel.dp']} exceeds {gpus} GPUs"
        return None
    gpus = base.num_gpus if gpus is None else gpus
    if gpus % (tp * pp):
        return f"{gpus} GPUs do not split into TP x PP = {tp * pp}"
    changes["num_gpus"] = gpus
    changes["parallel.dp"] = gpus // (tp * pp)
    return None
