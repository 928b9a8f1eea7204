"""The compare view's engine side: :func:`workbench.engine.compare.compare`, pair by pair, with
each sized pair remembered.

Sizing a candidate (the fewest GPUs and the best layout) is what costs time; judging it against
the targets and ranking are arithmetic. So each (scenario, candidate) pair is sized once through
``compare()`` itself and kept; a new target, a candidate ticked or unticked, or an edit of another
scenario re-judges and re-ranks the kept pairs with the engine's own :func:`judge`, :func:`rank`
and :func:`overall`: the same table ``compare()`` gives, without sizing anything again. The tests
hold the two equal.

No Qt here: this runs on the compare view's worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from workbench.core.errors import WorkbenchError
from workbench.core.project import Project
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.compare import (
    Candidate,
    CandidateResult,
    Comparison,
    Resolve,
    Targets,
    compare,
    judge,
    overall,
    rank,
)
from workbench.engine.pipeline import Engine
from workbench.engine.solvers import MAX_GPUS
from workbench.gui.catalogs import Catalogs

#: Scenario versions whose sized pairs are kept (the newest ones): each pair holds a full
#: estimate, and a large heap makes the garbage collector's pauses show up in the timings.
MAX_SCENARIOS_KEPT = 4


@dataclass(frozen=True)
class CompareRequest:
    """What to compare: candidates on scenarios of a project, against targets."""

    project: Project
    scenarios: tuple[Scenario, ...]
    candidates: tuple[Candidate, ...]
    targets: Targets = field(default_factory=Targets)
    max_gpus: int = MAX_GPUS


@dataclass
class CompareResult:
    request: CompareRequest
    comparison: Comparison | None
    elapsed_s: float
    sized: int  # pairs sized now (the rest were kept from earlier runs)
    problems: list[str] = field(default_factory=list)  # candidates that could not be compared, and why


class Comparer:
    """Runs comparisons, keeping the sized pairs of the newest scenario versions until the engine or
    the project's own models and accelerators change."""

    def __init__(self, catalogs: Catalogs) -> None:
        self.catalogs = catalogs
        # scenario (as JSON) -> (candidate, max GPUs) -> sized pair; oldest scenario first
        self._kept: dict[str, dict[tuple[Candidate, int], CandidateResult]] = {}
        self._engine: Engine | None = None
        self._project_parts: tuple[object, object] | None = None

    def forget(self) -> None:
        self._kept.clear()

    def run(self, engine: Engine, request: CompareRequest,
            stale: Callable[[], bool] = lambda: False) -> CompareResult | None:
        """The comparison of ``request``; None when ``stale()`` turned true on the way."""
        start = time.perf_counter()
        project = request.project
        parts = (project.models, project.accelerators)
        if engine is not self._engine or parts != self._project_parts:
            self._kept.clear()
            self._engine, self._project_parts = engine, parts

        def resolve(scenario: Scenario) -> ResolvedScenario:
            return self.catalogs.resolve(scenario, project)

        sized = 0
        problems: dict[Candidate, str] = {}
        rows: list[dict[Candidate, CandidateResult]] = []
        for scenario in request.scenarios:
            key_text = scenario.model_dump_json()
            kept = self._kept.pop(key_text, {})
            self._kept[key_text] = kept  # the newest now
            missing = [c for c in request.candidates
                       if (c, request.max_gpus) not in kept and c not in problems]
            if missing:
                if stale():
                    return None
                for row in self._size(engine, scenario, missing, resolve, request, problems):
                    kept[(row.candidate, request.max_gpus)] = row
                    sized += 1
            rows.append({c: kept[(c, request.max_gpus)] for c in request.candidates
                         if (c, request.max_gpus) in kept})
        while len(self._kept) > max(MAX_SCENARIOS_KEPT, len(request.scenarios)):
            del self._kept[next(iter(self._kept))]
        candidates = [c for c in request.candidates if c not in problems]
        comparison = None
        if candidates and request.scenarios:
            comparison = self._rank(request, rows, candidates)
        notes = [f"{c.label}: {message}" for c, message in problems.items()]
        return CompareResult(request, comparison, time.perf_counter() - start, sized, notes)

    @staticmethod
    def _size(engine: Engine, scenario: Scenario, candidates: list[Candidate], resolve: Resolve,
              request: CompareRequest, problems: dict[Candidate, str]) -> list[CandidateResult]:
        """Size ``candidates`` on ``scenario`` in one ``compare()`` (it shares work between them);
        one by one when some candidate cannot be resolved, to name it in ``problems``."""
        try:
            one = compare(engine, [scenario], candidates, resolve, request.targets, max_gpus=request.max_gpus)
            return one.scenarios[0].results
        except WorkbenchError:
            if len(candidates) == 1:
                raise
        found = []
        for candidate in candidates:
            try:
                found += Comparer._size(engine, scenario, [candidate], resolve, request, problems)
            except WorkbenchError as exc:
                problems[candidate] = str(exc)
        return found

    @staticmethod
    def _rank(request: CompareRequest, rows: Sequence[dict[Candidate, CandidateResult]],
              candidates: Sequence[Candidate]) -> Comparison:
        targets = request.targets
        per_scenario = []
        for scenario, found in zip(request.scenarios, rows):
            judged = []
            for candidate in candidates:
                row = found[candidate]
                sized = row.estimate.resolved.scenario if row.estimate is not None else scenario
                failures = tuple(judge(targets, sized, row.values, row.fits, request.max_gpus))
                # A copy: ranking writes rank and verdict, and the kept row may be on screen.
                judged.append(replace(row, failures=failures))
            per_scenario.append(rank(scenario, judged))
        best, why = overall(per_scenario, candidates)
        return Comparison(tuple(candidates), targets, per_scenario, best, why)
