"""Sweeps: the cartesian product of field values, each estimated on the same engine.

Values are validated once per distinct value (not per point); models and accelerators are
resolved once per distinct id; points are plain ``model_copy`` variants of one scenario.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
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
    wanted: Sequence[str] | None = None,
) -> Iterator[SweepPoint]:
    """Estimate every combination of the axes' values, in order (``wanted``: keys needed)."""
    yield from _points(base, axes, resolve, engine, wanted, itertools.product(*(axis.values for axis in axes)))


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One sweep point reduced to plain values (picklable, for worker processes)."""

    settings: dict[str, Any]
    values: dict[str, Any]
    error: str | None


#: Below this many points one process is faster than starting workers.
PARALLEL_THRESHOLD = 2000
_JOB: dict[str, Any] = {}


def sweep_rows(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
    keys: Sequence[str],
    workers: int | None = None,
) -> Iterator[SweepRow]:
    """Like :func:`run_sweep` but yields only ``keys``' values, using every core for big sweeps.

    Worker processes are forked after the plugins and catalogs are loaded, so they start with
    everything warm; each takes contiguous chunks of the point list and rows come back in order.
    """
    combos = list(itertools.product(*(axis.values for axis in axes)))
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers < 2 or len(combos) < PARALLEL_THRESHOLD or "fork" not in mp.get_all_start_methods():
        yield from (_row(p, keys) for p in _points(base, axes, resolve, engine, keys, combos))
        return
    _JOB.update(base=base, axes=axes, resolve=resolve, engine=engine, keys=tuple(keys), combos=combos)
    chunk = max(200, len(combos) // (workers * 4))
    bounds = [(start, min(start + chunk, len(combos))) for start in range(0, len(combos), chunk)]
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            for rows in pool.imap(_work, bounds):
                yield from rows
    finally:
        _JOB.clear()


def _work(bounds: tuple[int, int]) -> list[SweepRow]:
    job = _JOB
    combos = job["combos"][bounds[0] : bounds[1]]
    points = _points(job["base"], job["axes"], job["resolve"], job["engine"], job["keys"], combos)
    return [_row(point, job["keys"]) for point in points]


def _row(point: SweepPoint, keys: Sequence[str]) -> SweepRow:
    if point.estimate is None:
        return SweepRow(point.settings, dict.fromkeys(keys), point.error)
    get = point.estimate.get
    return SweepRow(point.settings, {k: get(k) for k in keys}, None)


def _points(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
    wanted: Sequence[str] | None,
    combos: Iterable[tuple[Any, ...]],
) -> Iterator[SweepPoint]:
    resolved_cache: dict[tuple[str, str, str | None], ResolvedScenario] = {}
    for combo in combos:
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
        yield SweepPoint(settings, engine.run(anchor.with_scenario(scenario), wanted))


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
    if gpus is None:
        # GPUs follow the layout: TP x PP x DP with the scenario's DP, as launchers count them.
        changes["num_gpus"] = tp * pp * base.parallel.dp
        return None
    if gpus % (tp * pp):
        return f"{gpus} GPUs do not split into TP x PP = {tp * pp}"
    changes["parallel.dp"] = gpus // (tp * pp)
    return None
