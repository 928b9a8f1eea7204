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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from workbench.core.errors import InputError
from workbench.core.hardware import Cluster
from workbench.core.limits import MAX_AXIS_VALUES, MAX_GPUS, MAX_SWEEP_POINTS
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.points import POINT_FIELDS
from workbench.engine.points_estimate import GroupEstimate
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
    names = [axis.name for axis in axes]
    wanted_keys = None if wanted is None else tuple(wanted)
    for block in _blocks(axes):
        for combo, found in _block_points(variants, engine, wanted_keys, axes, block):
            settings = dict(zip(names, combo))
            if isinstance(found, str):
                yield SweepPoint(settings, None, found)
            else:
                group, i = found
                yield SweepPoint(settings, group.estimate(i))


#: Points evaluated together at most: the sweep's trailing axes up to this many combinations form a
#: block, inside which the points that differ only in batch and lengths are one point group.
BLOCK_POINTS = 16384


def _blocks(axes: Sequence[Axis]) -> Iterator[tuple[tuple[Any, ...], int]]:
    """(values of the leading axes, index of the first trailing axis) per block, in sweep order:
    the trailing axes whose product fits :data:`BLOCK_POINTS` are evaluated together."""
    sizes = [len(axis.values) for axis in axes]
    first = len(axes)
    while first > 0 and math.prod(sizes[first - 1 :]) <= BLOCK_POINTS:
        first -= 1
    for prefix in itertools.product(*(axis.values for axis in axes[:first])):
        yield prefix, first


@dataclass(frozen=True, slots=True)
class _Block:
    """A block laid out for evaluation: its groups (one per combination of the trailing axes that
    are not point fields) and the point arrays every group shares."""

    prefix: tuple[Any, ...]
    trailing: tuple[Axis, ...]
    point_at: tuple[int, ...]
    other_at: tuple[int, ...]
    point_combos: tuple[tuple[Any, ...], ...]
    arrays: dict[str, list[Any]]
    groups: int

    @classmethod
    def of(cls, axes: Sequence[Axis], block: tuple[tuple[Any, ...], int]) -> _Block:
        prefix, first = block
        trailing = tuple(axes[first:])
        point_at = tuple(i for i, axis in enumerate(trailing) if axis.path in POINT_FIELDS)
        other_at = tuple(i for i, axis in enumerate(trailing) if axis.path not in POINT_FIELDS)
        point_combos = tuple(itertools.product(*(trailing[i].values for i in point_at)))
        arrays: dict[str, list[Any]] = {}
        for j, i in enumerate(point_at):
            # later axes of the same field win, as they do in a scenario built from the combo
            arrays[trailing[i].path] = [combo[j] for combo in point_combos]
        groups = math.prod(len(trailing[i].values) for i in other_at)
        return cls(prefix, trailing, point_at, other_at, point_combos, arrays, groups)

    def group_combos(self, lo: int, hi: int) -> Iterator[tuple[Any, ...]]:
        """The full combos (prefix included, first point's values) of groups ``lo`` to ``hi``."""
        others = itertools.islice(itertools.product(*(self.trailing[i].values for i in self.other_at)), lo, hi)
        for values in others:
            combo: list[Any] = [None] * len(self.trailing)
            for i, value in zip(self.other_at, values):
                combo[i] = value
            for i, value in zip(self.point_at, self.point_combos[0]):
                combo[i] = value
            yield self.prefix + tuple(combo)

    def in_sweep_order(self, results: Sequence[Any]) -> list[tuple[tuple[Any, ...], Any]]:
        """(combo, result) per point in sweep order, from results listed group by group."""
        sizes = [len(axis.values) for axis in self.trailing]
        order = np.arange(math.prod(sizes)).reshape(sizes).transpose(self.other_at + self.point_at).reshape(-1)
        where = np.empty_like(order)
        where[order] = np.arange(order.size)
        combos = itertools.product(*(axis.values for axis in self.trailing))
        return [(self.prefix + combo, results[k]) for combo, k in zip(combos, where.tolist())]


def _groups(
    variants: _Variants, engine: Engine, keys: tuple[str, ...] | None, block: _Block, lo: int, hi: int
) -> Iterator[GroupEstimate | str]:
    """Groups ``lo`` to ``hi`` of a block estimated (or the reason each cannot run)."""
    arrays = block.arrays if block.point_at else None
    for combo in block.group_combos(lo, hi):
        resolved = variants.resolved(combo)
        yield resolved if isinstance(resolved, str) else engine.run_points(resolved, arrays, keys)


def _block_points(
    variants: _Variants,
    engine: Engine,
    keys: tuple[str, ...] | None,
    axes: Sequence[Axis],
    block: tuple[tuple[Any, ...], int],
) -> list[tuple[tuple[Any, ...], tuple[GroupEstimate, int] | str]]:
    """Every point of a block in sweep order: its combo, and its group and index (or the reason
    it cannot run). Points that differ only in :data:`POINT_FIELDS` axes share one engine call."""
    laid = _Block.of(axes, block)
    size = len(laid.point_combos)
    results: list[tuple[GroupEstimate, int] | str] = []
    for group in _groups(variants, engine, keys, laid, 0, laid.groups):
        results.extend([group] * size if isinstance(group, str) else [(group, k) for k in range(size)])
    return laid.in_sweep_order(results)


@dataclass(frozen=True, slots=True)
class SweepRow:
    """One sweep point reduced to plain values (picklable, for worker processes)."""

    settings: dict[str, Any]
    values: dict[str, Any]
    error: str | None


#: A sweep point as plain tuples: (the axes' values, the keys' values, error or None).
TableRow = tuple[tuple[Any, ...], tuple[Any, ...], str | None]

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
    """The points in consecutive chunks (a block each), each handed to ``render`` (a list of
    :data:`TableRow`), in order.

    The sweep is cut into blocks of its trailing axes (:func:`_blocks`); in each block the points
    that differ only in batch size and lengths are one point group, estimated in one engine call
    per array estimator. Big sweeps spread the groups of each block over every core: worker
    processes are forked once, after the first group is estimated here (plugins, catalogs and
    per-model caches warm in all of them), and send back plain tables.
    """
    total = check_sweep_size(axes)
    keys = tuple(keys)
    variants = _Variants(base, axes, resolve)
    workers = workers if workers is not None else (os.cpu_count() or 1)
    # Array estimators do a big group in microseconds per point: forking pays off only when some
    # estimator of the run still goes point by point.
    parallel = (
        workers > 1
        and total >= PARALLEL_THRESHOLD
        and "fork" in mp.get_all_start_methods()
        and engine.runs_point_by_point(keys, base)
    )
    pool = None
    try:
        for block in _blocks(axes):
            laid = _Block.of(axes, block)
            if parallel and pool is None and laid.groups > 1:
                next(_groups(variants, engine, keys, laid, 0, 1))  # warm before forking
                _JOB.update(variants=variants, engine=engine, keys=keys)
                gc.collect()
                gc.freeze()  # the workers inherit a heap the collector no longer walks
                pool = mp.get_context("fork").Pool(workers)
            if pool is not None and laid.groups > 1:
                step = max(1, -(-laid.groups // (workers * 4)))
                spans = [(laid, lo, min(lo + step, laid.groups)) for lo in range(0, laid.groups, step)]
                tables = [t for part in pool.imap(_work, spans) for t in part]
            else:
                tables = [_table_of(group, keys) for group in _groups(variants, engine, keys, laid, 0, laid.groups)]
            yield render(_rows_of(laid, tables, len(keys)))
    finally:
        if pool is not None:
            pool.terminate()
            _JOB.clear()
            gc.unfreeze()


T = TypeVar("T")
#: Below this many points one process is faster than starting workers.
PARALLEL_THRESHOLD = 2000


def _table_of(group: GroupEstimate | str, keys: tuple[str, ...]) -> list[tuple[Any, ...]] | str:
    return group if isinstance(group, str) else group.table(keys)


def _work(span: tuple[_Block, int, int]) -> list[list[tuple[Any, ...]] | str]:
    job = _JOB
    laid, lo, hi = span
    return [_table_of(group, job["keys"]) for group in _groups(job["variants"], job["engine"], job["keys"], laid, lo, hi)]


def _rows_of(laid: _Block, tables: Sequence[list[tuple[Any, ...]] | str], width: int) -> list[TableRow]:
    """A block's rows in sweep order from its groups' tables (or errors), listed group by group."""
    nothing = (None,) * width
    size = len(laid.point_combos)
    flat: list[tuple[tuple[Any, ...], str | None]] = []
    for table in tables:
        if isinstance(table, str):
            flat.extend([(nothing, table)] * size)
        else:
            flat.extend((values, None) for values in table)
    return [(combo, values, error) for combo, (values, error) in laid.in_sweep_order(flat)]


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
