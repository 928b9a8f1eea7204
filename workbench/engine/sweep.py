"""Sweeps: the cartesian product of field values, each estimated on the same engine.

Values are validated once per distinct value (not per point); models and accelerators are
resolved once per distinct id; points are plain ``model_copy`` variants of one scenario. Table
sweeps (:func:`sweep_rows`, :func:`sweep_chunks`) run the engine for their keys only
(``Engine.run(resolved, keys)``), so the estimators skip what no column reads, and big ones are
split over forked worker processes.
"""

from __future__ import annotations

import gc
import itertools
import math
import multiprocessing as mp
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from workbench.core.errors import InputError
from workbench.core.hardware import Cluster
from workbench.core.limits import MAX_AXIS_VALUES, MAX_GPUS, MAX_SWEEP_POINTS
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.variations import field_path, validated_value

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
        raise InputError(f"--vary: expected FIELD=V1,V2,..., got '{_short(spec)}'")
    path = field_path(name)
    if raw.count(",") >= MAX_AXIS_VALUES:
        raise InputError(f"--vary {name}: more than {MAX_AXIS_VALUES:,} values on one axis")
    items = [v.strip() for v in raw.split(",") if v.strip()]
    if len(items) == 1 and ".." in items[0]:
        items = _doubling_range(items[0], spec)
    structural = path in ("model", "gpu")
    values = tuple(items if structural else [validated_value(base, path, v) for v in items])
    return Axis(name, path, values)


def _doubling_range(text: str, spec: str) -> list[str]:
    start_text, _, end_text = text.partition("..")
    if len(start_text.strip()) > 20 or len(end_text.strip()) > 20:  # beyond every field's limit
        raise InputError("--vary: a range's START and END must have at most 20 digits")
    try:
        start, end = int(start_text), int(end_text)
    except ValueError:
        raise InputError(f"--vary: a range is START..END in integers, got '{_short(spec)}'") from None
    if start <= 0 or end < start:
        raise InputError(f"--vary: a range needs 0 < START <= END, got '{_short(spec)}'")
    values = []
    while start <= end:
        values.append(str(start))
        start *= 2
    return values


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def sweep_size(axes: Sequence[Axis]) -> int:
    """Points in the sweep: the product of the axes' lengths (nothing is built)."""
    return math.prod(len(axis.values) for axis in axes)


def check_sweep_size(axes: Sequence[Axis]) -> int:
    """The sweep's size, or InputError when it exceeds :data:`MAX_SWEEP_POINTS`."""
    size = sweep_size(axes)
    if size > MAX_SWEEP_POINTS:
        shape = " x ".join(f"{len(axis.values):,}" for axis in axes)
        raise InputError(
            f"sweep: {shape} = {size:,} points is more than the limit of {MAX_SWEEP_POINTS:,}; "
            "vary fewer values or split the sweep"
        )
    return size


def _combos(values: Sequence[Sequence[Any]], start: int, stop: int) -> Iterator[tuple[Any, ...]]:
    """Points ``start`` to ``stop`` of the product of ``values`` (last axis fastest), built one at a
    time from their index, so that no process ever holds the whole list of points."""
    stop = min(stop, math.prod(len(axis) for axis in values))
    if start >= stop:
        return
    digits = []
    rest = start
    for axis in reversed(values):
        rest, digit = divmod(rest, len(axis))
        digits.append(digit)
    digits.reverse()
    yield from itertools.islice(
        itertools.chain(
            [tuple(axis[d] for axis, d in zip(values, digits))],
            _odometer(values, digits),
        ),
        stop - start,
    )


def _odometer(values: Sequence[Sequence[Any]], digits: list[int]) -> Iterator[tuple[Any, ...]]:
    """The points after ``digits``, in product order, until the product ends."""
    last = len(values) - 1
    while True:
        i = last
        while i >= 0:
            digits[i] += 1
            if digits[i] < len(values[i]):
                break
            digits[i] = 0
            i -= 1
        if i < 0:
            return
        yield tuple(axis[d] for axis, d in zip(values, digits))


def run_sweep(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
    wanted: Sequence[str] | None = None,
) -> Iterator[SweepPoint]:
    """Estimate every combination of the axes' values, in order (``wanted``: keys needed)."""
    check_sweep_size(axes)
    variants = _Variants(base, axes, resolve)
    for combo in itertools.product(*(axis.values for axis in axes)):
        settings = {axis.name: value for axis, value in zip(axes, combo)}
        resolved = variants.resolved(combo)
        if isinstance(resolved, str):
            yield SweepPoint(settings, None, resolved)
        else:
            yield SweepPoint(settings, engine.run(resolved, wanted))


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One sweep point reduced to plain values (picklable, for worker processes)."""

    settings: dict[str, Any]
    values: dict[str, Any]
    error: str | None


#: A sweep point as plain tuples: (the axes' values, the keys' values, error or None).
TableRow = tuple[tuple[Any, ...], tuple[Any, ...], str | None]

#: Below this many points one process is faster than starting workers.
PARALLEL_THRESHOLD = 2000
#: Points estimated in the parent before the workers fork: they warm the plugins' per-model
#: caches and the resolved anchors once, for every worker.
_WARM_POINTS = 32
_JOB: dict[str, Any] = {}


def sweep_rows(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
    keys: Sequence[str],
    workers: int | None = None,
) -> Iterator[SweepRow]:
    """Like :func:`run_sweep` but yields only ``keys``' values, using every core for big sweeps."""
    names = [axis.name for axis in axes]
    keys = tuple(keys)
    for combo, values, error in sweep_table(base, axes, resolve, engine, keys, workers):
        yield SweepRow(dict(zip(names, combo)), dict(zip(keys, values)), error)


def sweep_table(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
    keys: Sequence[str],
    workers: int | None = None,
) -> Iterator[TableRow]:
    """Every point as plain tuples (axes' values, keys' values, error), in order."""
    for rows in sweep_chunks(base, axes, resolve, engine, keys, list, workers):
        yield from rows


def sweep_chunks(
    base: Scenario,
    axes: Sequence[Axis],
    resolve: Callable[[Scenario], ResolvedScenario],
    engine: Engine,
    keys: Sequence[str],
    render: Callable[[list[TableRow]], T],
    workers: int | None = None,
) -> Iterator[T]:
    """The points in consecutive chunks, each handed to ``render`` (a list of :data:`TableRow`),
    in order. The CLI renders CSV text, so big sweeps ship text between processes, not rows.

    Big sweeps use every core: worker processes are forked after the plugins and catalogs are
    loaded and the first points estimated here (so every per-model cache is warm in all of them);
    each takes small contiguous chunks of the point list (so a slow stretch, such as the largest
    batches, spreads over all workers) and renders them itself; chunks come back in order.
    """
    total = check_sweep_size(axes)
    values = tuple(axis.values for axis in axes)
    keys = tuple(keys)
    variants = _Variants(base, axes, resolve)
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers < 2 or total < PARALLEL_THRESHOLD or "fork" not in mp.get_all_start_methods():
        combos = itertools.product(*values)
        for start in range(0, total, _SERIAL_CHUNK):
            chunk_combos = list(itertools.islice(combos, _SERIAL_CHUNK))
            yield render(_rows(variants, engine, keys, chunk_combos))
        return
    warm = list(_combos(values, 0, min(_WARM_POINTS, total)))
    yield render(_rows(variants, engine, keys, warm))
    _JOB.update(variants=variants, engine=engine, keys=keys, values=values, render=render)
    first = len(warm)
    chunk = max(64, (total - first) // (workers * 16))
    bounds = [(start, min(start + chunk, total)) for start in range(first, total, chunk)]
    gc.collect()
    gc.freeze()  # the workers inherit a heap the collector no longer walks (fewer copied pages too)
    try:
        with mp.get_context("fork").Pool(workers) as pool:
            yield from pool.imap(_work, bounds)
    finally:
        _JOB.clear()
        gc.unfreeze()


T = TypeVar("T")
#: Points per chunk when one process does the whole sweep (rows are rendered as they come).
_SERIAL_CHUNK = 256


def _work(bounds: tuple[int, int]) -> Any:
    job = _JOB
    combos = list(_combos(job["values"], bounds[0], bounds[1]))
    return job["render"](_rows(job["variants"], job["engine"], job["keys"], combos))


def _rows(
    variants: _Variants, engine: Engine, keys: tuple[str, ...], combos: Sequence[tuple[Any, ...]]
) -> list[TableRow]:
    rows = _table(variants, engine, keys, combos)
    return [(combo, values, error) for combo, (values, error) in zip(combos, rows)]


def _table(
    variants: _Variants, engine: Engine, keys: tuple[str, ...], combos: Iterable[tuple[Any, ...]]
) -> Iterator[tuple[tuple[Any, ...], str | None]]:
    """(values of ``keys``, error) per point; the engine runs only what ``keys`` need."""
    nothing = (None,) * len(keys)
    for combo in combos:
        resolved = variants.resolved(combo)
        if isinstance(resolved, str):
            yield nothing, resolved
            continue
        values = engine.run(resolved, keys).values
        yield tuple([None if (found := values.get(k)) is None else found.value for k in keys]), None


class _Variants:
    """The resolved scenario of each point, built without re-validating anything.

    Values were validated once per distinct value (:func:`parse_axis`); points are ``model_copy``
    variants of the base scenario. Few distinct nested models (``parallel`` with each TP degree),
    resolved anchors (model x accelerator x node) and clusters (GPU counts) recur, so each is built
    once and shared by every point that has it.
    """

    def __init__(
        self, base: Scenario, axes: Sequence[Axis], resolve: Callable[[Scenario], ResolvedScenario]
    ) -> None:
        self.base = base
        self.paths = tuple(axis.path for axis in axes)
        self.layout = bool(_LAYOUT_FIELDS.intersection(self.paths))
        self.resolve = resolve
        self._nested: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}
        self._anchors: dict[tuple[str, str, str | None], ResolvedScenario] = {}
        self._clusters: dict[tuple[tuple[str, str, str | None], int], Cluster] = {}
        self._split: dict[str, tuple[str, str]] = {}  # field path -> (model field, nested field or "")

    def resolved(self, combo: tuple[Any, ...]) -> ResolvedScenario | str:
        """The point's resolved scenario, or the reason it cannot run (a layout or catalog error)."""
        base = self.base
        changes = dict(zip(self.paths, combo))
        if self.layout:
            problem = _fix_layout(base, changes)
            if problem:
                return problem
        scenario = self._scenario(changes)
        key = (scenario.model, scenario.gpu, scenario.node)
        anchor = self._anchors.get(key)
        if anchor is None:
            try:
                anchor = self._anchors[key] = self.resolve(scenario)
            except InputError as exc:
                return str(exc)
        if scenario.parallel.pp > anchor.model.total_layers:  # a stage per PP rank would be built
            return f"PP {scenario.parallel.pp:,} exceeds the model's {anchor.model.total_layers:,} layers"
        cluster = anchor.cluster
        if scenario.num_gpus != cluster.num_gpus:  # as ResolvedScenario.with_scenario, one copy per count
            cluster = self._clusters.get((key, scenario.num_gpus))
            if cluster is None:
                cluster = anchor.cluster.model_copy(update={"num_gpus": scenario.num_gpus})
                self._clusters[key, scenario.num_gpus] = cluster
        return ResolvedScenario(scenario, anchor.model, cluster)

    def _scenario(self, changes: dict[str, Any]) -> Scenario:
        """:func:`~workbench.engine.variations.with_fields`, with the nested models cached."""
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        split = self._split
        for path, value in changes.items():
            parts = split.get(path)
            if parts is None:
                head, _, tail = path.partition(".")
                parts = split[path] = (head, tail)
            head, tail = parts
            if tail:
                nested.setdefault(head, {})[tail] = value
            else:
                top[head] = value
        for head, sub in nested.items():
            key = (head, tuple(sub.items()))
            model = self._nested.get(key)
            if model is None:
                model = self._nested[key] = getattr(self.base, head).model_copy(update=sub)
            top[head] = model
        return self.base.model_copy(update=top)


def _fix_layout(base: Scenario, changes: dict[str, Any]) -> str | None:
    """Keep TP x PP x DP = GPUs when a sweep changes one of them (DP or GPUs absorb the rest)."""
    problem = _layout_problem(base, changes)
    if problem is None and changes.get("num_gpus", base.num_gpus) > MAX_GPUS:
        problem = f"{changes['num_gpus']:,} GPUs is more than the limit of {MAX_GPUS:,}"
    return problem


def _layout_problem(base: Scenario, changes: dict[str, Any]) -> str | None:
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
