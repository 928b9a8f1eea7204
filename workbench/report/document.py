"""The report model: what goes into a sizing report, and the numbers it is made from.

A :class:`ReportRequest` says which scenarios and sections, for which project, by whom, on
what date, with which app version, on which paper. :func:`collect` runs the engine once per
scenario (and the comparison and sensitivity analyses where they are available) and returns a
:class:`ReportData` that the section builders read. Nothing here imports Qt: the same data can
feed the PDF, and a test can check it without a painter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench import __version__
from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine


@dataclass(frozen=True, slots=True)
class SectionInfo:
    id: str
    title: str
    description: str


#: Built-in sections, in the order they appear in a report.
SECTIONS: tuple[SectionInfo, ...] = (
    SectionInfo("cover", "Cover", "Project, author, date and app version"),
    SectionInfo(
        "summary", "Executive summary", "The recommendation: fit, GPUs needed, speed and cost with ranges"
    ),
    SectionInfo(
        "inputs", "Inputs", "Model architecture, hardware datasheet figures with sources, scenario settings"
    ),
    SectionInfo("memory", "Memory per GPU", "Memory stack chart per scenario, against the GPU's capacity"),
    SectionInfo("roofline", "Roofline", "Roofline chart per scenario with its operating points, and where a step's time goes (kernel groups)"),
    SectionInfo("comparison", "Comparison", "Candidates ranked against the scenarios (needs several)"),
    SectionInfo("sensitivity", "Sensitivity", "Which assumptions move the headline numbers most (tornado)"),
    SectionInfo(
        "calibration",
        "Calibration",
        "The calibration profile applied: its measurements, the assumptions it moved, residuals before and "
        "after, leave-one-out error (only with a profile)",
    ),
    SectionInfo(
        "assumptions",
        "Assumptions and formulas",
        "Every assumption used with its source; every headline formula with its values",
    ),
    SectionInfo("warnings", "Warnings and fixes", "Guard-rail findings and what to change"),
)
SECTION_IDS: tuple[str, ...] = tuple(s.id for s in SECTIONS)
PAGE_SIZES: tuple[str, ...] = ("a4", "letter")

Progress = Callable[[int, int, str], None]


class ReportCancelled(Exception):
    """Raised from a progress callback to stop building a report."""


def parse_sections(text: str | Iterable[str] | None, known: Sequence[str] = SECTION_IDS) -> tuple[str, ...]:
    """Section ids from ``"cover,summary"`` (or a list), checked, in report order."""
    if text is None:
        return tuple(known)
    items = text.split(",") if isinstance(text, str) else list(text)
    wanted = [item.strip().lower() for item in items if item.strip()]
    unknown = [item for item in wanted if item not in known]
    if unknown:
        raise InputError(f"--sections: unknown section '{unknown[0]}' (sections: {', '.join(known)})")
    if not wanted:
        raise InputError(f"--sections: name at least one section ({', '.join(known)})")
    return tuple(s for s in known if s in wanted)


@dataclass(frozen=True)
class ReportRequest:
    """Which report to make. Empty ``scenarios`` means every scenario of the project."""

    project: Project
    scenarios: tuple[str, ...] = ()
    sections: tuple[str, ...] = SECTION_IDS
    candidates: tuple[str, ...] = ()
    #: What the recommendation must meet (``workbench.engine.compare.Targets``); None: the targets
    #: of the project's saved comparison (the window's Compare tab), if any.
    targets: Any = None
    page_size: str = "a4"
    #: Draws of the documented assumption ranges behind the comparison's decision confidence
    #: (``workbench.engine.confidence``); 0: none.
    confidence_draws: int = 0
    #: Add the comparison at equal service level (``workbench.engine.iso_sla``) of the first serving
    #: scenario, with its confidence over ``confidence_draws`` draws when that is not 0.
    iso_sla: bool = False
    #: Weight precisions the equal-service-level search may choose (empty: the scenario's own).
    weights_options: tuple[str, ...] = ()
    #: A calibration profile (``workbench.measure.profile.CalibrationProfile``) applied to every
    #: scenario and candidate on its GPU and engine; None: the estimates as the assumptions give them.
    calibration: Any = None
    title: str = "GPU sizing report"
    author: str | None = None
    date: dt.date = field(default_factory=dt.date.today)
    app_version: str = __version__

    @property
    def project_name(self) -> str:
        return self.project.name

    @property
    def author_name(self) -> str:
        return self.author if self.author is not None else self.project.author

    def check(self, known_sections: Sequence[str] = SECTION_IDS) -> None:
        """Refuse what cannot make a report (unknown scenario or section, bad paper size)."""
        if self.page_size not in PAGE_SIZES:
            raise InputError(f"page size '{self.page_size}' is not one of {', '.join(PAGE_SIZES)}")
        unknown = [s for s in self.sections if s not in known_sections]
        if unknown:
            raise InputError(f"unknown report section '{unknown[0]}' (sections: {', '.join(known_sections)})")
        if not self.sections:
            raise InputError("a report needs at least one section")
        if not self.project.scenarios:
            raise InputError(f"project '{self.project.name}' has no scenarios to report on")
        for name in self.scenarios:
            try:
                self.project.scenario(name)
            except KeyError as exc:
                raise InputError(str(exc.args[0])) from None

    def selected_scenarios(self) -> tuple[Any, ...]:
        if not self.scenarios:
            return self.project.scenarios
        return tuple(self.project.scenario(name) for name in self.scenarios)


@dataclass
class ReportData:
    """Everything a report shows, computed once."""

    request: ReportRequest
    estimates: list[Estimate]
    #: Result of ``workbench.engine.compare`` (None: not wanted, not available, or one candidate).
    comparison: Any = None
    #: ``workbench.engine.confidence.Confidence`` of that comparison (None: not asked for).
    confidence: Any = None
    #: (scenario name, Pareto fronts of the charted candidates, how many were left out), or None.
    pareto: Any = None
    #: (scenario name, ranked ``iso_sla`` results, ``IsoConfidence`` or None, whether a demand is
    #: set: cost per hour of its replicas, else per million tokens) when asked, or None.
    iso: Any = None
    #: Scenario name -> result of ``workbench.engine.sensitivity`` for that scenario.
    sensitivity: dict[str, Any] = field(default_factory=dict)
    #: Scenario name -> the fixes that make it fit (``workbench.engine.fixes``), for plans that do not.
    fixes: dict[str, Any] = field(default_factory=dict)
    #: Analyses that could not run, with the reason (shown in the report, never silently dropped).
    notes: list[str] = field(default_factory=list)
    generated: dt.datetime = field(default_factory=lambda: dt.datetime.now().replace(microsecond=0))

    def wants(self, section: str) -> bool:
        return section in self.request.sections


class Resolver:
    """Resolves the report's scenarios against its project, calibrated where the request's profile
    was fitted (``prepare`` lets the comparison's cache keep the calibrated scenario)."""

    def __init__(self, request: ReportRequest) -> None:
        self.project, self.profile = request.project, request.calibration

    def prepare(self, scenario: Any) -> Any:
        if self.profile is None:
            return scenario
        from workbench.measure.profile import apply_where_fitted

        return apply_where_fitted(self.profile, scenario)

    def __call__(self, scenario: Any) -> Any:
        from workbench.catalog.resolve import resolve_scenario

        return resolve_scenario(self.prepare(scenario), self.project)


def is_calibrated(request: ReportRequest, scenario: Any) -> bool:
    """Whether the request's profile calibrates ``scenario`` (its GPU and engine are the profile's)."""
    if request.calibration is None:
        return False
    from workbench.measure.profile import fitted_for

    return fitted_for(request.calibration, scenario)


def _engine(engine: Engine | Callable[[], Engine] | None) -> Engine:
    if engine is None:
        from workbench.pluginhost import default_engine

        return default_engine()
    return engine() if callable(engine) and not isinstance(engine, Engine) else engine


def collect(
    request: ReportRequest,
    engine: Engine | Callable[[], Engine] | None = None,
    progress: Progress | None = None,
    known_sections: Sequence[str] = SECTION_IDS,
) -> ReportData:
    """Run every estimate (and analysis) the report needs. Raises InputError for unknown ids."""
    request.check(known_sections)
    scenarios = request.selected_scenarios()
    want_compare = "comparison" in request.sections or "summary" in request.sections
    want_sensitivity = "sensitivity" in request.sections
    steps = len(scenarios) * (2 if want_sensitivity else 1) + (1 if want_compare else 0)
    done = 0

    def tick(message: str) -> None:
        nonlocal done
        if progress is not None:
            progress(done, steps, message)
        done += 1

    eng = _engine(engine)
    estimates: list[Estimate] = []
    for scenario in scenarios:
        tick(f"Estimating {scenario.name}")
        estimates.append(eng.run(Resolver(request)(scenario)))
    data = ReportData(request=request, estimates=estimates)
    if "warnings" in request.sections:
        from workbench.engine.fixes import memory_fixes

        # The same fixes, in the same words, as the window's Results panel.
        data.fixes = {e.resolved.scenario.name: memory_fixes(eng, e.resolved)
                      for e in estimates if e.get("memory.fits") is False}
    if want_compare:
        tick("Comparing candidates")
        data.comparison = _compare(request, eng, data.notes)
        if data.comparison is not None and request.confidence_draws:
            data.confidence = _confidence(request, eng, data.comparison, data.notes)
        if data.comparison is not None:
            data.pareto = _pareto(request, eng, data.comparison, data.notes)
        if data.comparison is not None and request.iso_sla:
            tick("Comparing at equal service level")
            data.iso = _iso(request, eng, data.notes)
    if want_sensitivity:
        for estimate in estimates:
            tick(f"Sensitivity of {estimate.resolved.scenario.name}")
            result = _sensitivity(estimate, eng, data.notes)
            if result is not None:
                data.sensitivity[estimate.resolved.scenario.name] = result
    if progress is not None:
        progress(steps, steps, "Estimates done")
    return data


def comparison_candidates(request: ReportRequest) -> tuple[str, ...]:
    """The accelerators compared: the request's candidates, else those of the project's saved
    comparison (the Compare tab's), else every one its scenarios use."""
    if request.candidates:
        return request.candidates
    saved = request.project.comparisons
    if saved and saved[0].accelerators:
        return saved[0].accelerators
    return tuple(dict.fromkeys(s.gpu for s in request.selected_scenarios()))


def comparison_targets(request: ReportRequest) -> Any:
    """The targets the recommendation must meet: the request's, else the saved comparison's."""
    from workbench.engine.compare import Targets

    if request.targets is not None:
        return request.targets
    saved = request.project.comparisons
    return Targets.of(saved[0]) if saved else Targets()


def _compare(request: ReportRequest, engine: Engine, notes: list[str]) -> Any:
    """The comparison of candidates x scenarios, or None when there is nothing to compare."""
    scenarios = request.selected_scenarios()
    candidates = comparison_candidates(request)
    if len(scenarios) < 2 and len(candidates) < 2:
        return None
    try:
        from workbench.engine import compare as compare_module
    except ImportError:
        notes.append("The comparison is not available in this version of the workbench.")
        return None
    project = request.project
    # Prices entered per candidate in the Compare tab (saved with its setup) cost the report's
    # comparison as they cost the window's.
    prices = project.comparisons[0].usd_per_gpu_hour if project.comparisons else {}
    try:
        return compare_module.compare(
            engine,
            list(scenarios),
            [compare_module.Candidate(c, usd_per_gpu_hour=prices.get(c)) for c in candidates],
            Resolver(request),
            comparison_targets(request),
        )
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - an analysis that fails leaves the rest of the report
        notes.append(f"The comparison could not be made: {exc}")
        return None


#: Candidates a Pareto chart can tell apart (one colour each): the best-ranked ones.
PARETO_CANDIDATES = 7


def _pareto(request: ReportRequest, engine: Engine, comparison: Any, notes: list[str]) -> Any:
    """The Pareto fronts of the first serving scenario that generates tokens, for the comparison's
    best-ranked candidates; None when no scenario serves."""
    from workbench.engine.pareto import pareto_fronts

    scenario = next((s for s in request.selected_scenarios() if not s.is_training and s.gen_len >= 2), None)
    if scenario is None:
        return None
    ranked = next(sc for sc in comparison.scenarios if sc.scenario.name == scenario.name).results
    candidates = [r.candidate for r in ranked][:PARETO_CANDIDATES]
    try:
        fronts = pareto_fronts(engine, scenario, candidates, Resolver(request))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - an analysis that fails leaves the rest of the report
        notes.append(f"The Pareto fronts could not be computed: {exc}")
        return None
    return scenario.name, fronts, max(len(ranked) - len(candidates), 0)


def _iso(request: ReportRequest, engine: Engine, notes: list[str]) -> Any:
    """The first serving scenario's comparison at equal service level (with its confidence when
    draws are asked for), as (scenario name, ranked results, confidence or None); None when no
    scenario serves or it fails (said in ``notes``)."""
    from workbench.engine.compare import Candidate

    scenario = next((s for s in request.selected_scenarios() if not s.is_training), None)
    if scenario is None:
        notes.append("The comparison at equal service level is for serving scenarios: none is selected.")
        return None
    project = request.project
    prices = project.comparisons[0].usd_per_gpu_hour if project.comparisons else {}
    candidates = [Candidate(c, usd_per_gpu_hour=prices.get(c)) for c in comparison_candidates(request)]
    resolve = Resolver(request)
    weights = list(request.weights_options) or None
    targets = comparison_targets(request)
    demand = targets.min_tokens_per_s is not None
    try:
        if request.confidence_draws:
            from workbench.engine.iso_confidence import iso_sla_confidence

            confidence = iso_sla_confidence(engine, scenario, candidates, resolve, targets, weights=weights,
                                            draws=request.confidence_draws)  # fmt: skip
            return scenario.name, confidence.base, confidence, demand
        from workbench.engine.iso_sla import iso_sla

        return scenario.name, iso_sla(engine, scenario, candidates, resolve, targets, weights=weights), None, demand
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - an analysis that fails leaves the rest of the report
        notes.append(f"The comparison at equal service level could not be made: {exc}")
        return None


def _confidence(request: ReportRequest, engine: Engine, comparison: Any, notes: list[str]) -> Any:
    """How often each candidate of ``comparison`` wins over the request's draws (None on failure)."""
    from workbench.engine.confidence import decision_confidence

    try:
        return decision_confidence(
            engine,
            list(request.selected_scenarios()),
            list(comparison.candidates),
            Resolver(request),
            comparison.targets,
            draws=request.confidence_draws,
        )
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - an analysis that fails leaves the rest of the report
        notes.append(f"The decision confidence could not be computed: {exc}")
        return None


def _sensitivity(estimate: Estimate, engine: Engine, notes: list[str]) -> Any:
    try:
        from workbench.engine import sensitivity as sensitivity_module
    except ImportError:
        if not any("sensitivity" in n for n in notes):
            notes.append("The sensitivity analysis is not available in this version of the workbench.")
        return None
    try:
        return sensitivity_module.tornado(engine, estimate.resolved)
    except Exception as exc:  # noqa: BLE001 - one scenario's analysis failing leaves the others
        notes.append(f"Sensitivity of '{estimate.resolved.scenario.name}' could not be computed: {exc}")
        return None
