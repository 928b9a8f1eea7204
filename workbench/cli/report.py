"""`gpu-workbench report`: a PDF sizing report, from a project's scenarios or from scenario flags.

    gpu-workbench report --project plan.gpuwb [--scenario NAME ...] [--sections cover,summary,...]
                         [--gpus-list h100-sxm,l40s] [--page-size letter] -o report.pdf
    gpu-workbench report --model llama-3.1-8b --gpu h100-sxm --batch 16 -o report.pdf

Scenario flags given with ``--project`` override every chosen scenario. Painting needs a
QGuiApplication (never a window): one is made on the offscreen platform, so the command works
on a machine without a display. Every mistake (unknown file, scenario, section or accelerator;
an output that cannot be written) is one line and exit code 2, and leaves no partial file.
"""

from __future__ import annotations

import argparse
import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.core.errors import InputError
from workbench.core.project import Project


def add_report_command(sub: Any, add_scenario_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    from workbench.cli.compare import draw_count
    from workbench.report.document import PAGE_SIZES, SECTION_IDS

    report = sub.add_parser(
        "report",
        help="write a PDF sizing report (a project's scenarios, or one scenario from flags)",
        description="Write a PDF sizing report: summary and recommendation, inputs with datasheet sources, "
        "memory and roofline charts, comparison, sensitivity, assumptions and formulas, warnings.",
        conflict_handler="resolve",  # --scenario is repeatable here (it replaces the shared flag)
    )
    add_scenario_flags(report)
    report.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME|FILE",
        help="with --project: a scenario to include (repeatable; default: all of them); "
        "without: a scenario file (JSON or YAML)",
    )
    report.add_argument("-o", "--output", required=True, metavar="FILE", help="the PDF to write")
    report.add_argument(
        "--sections",
        metavar="LIST",
        help=f"comma-separated sections, in any order (default: all): {','.join(SECTION_IDS)}",
    )
    report.add_argument(
        "--gpus-list",
        metavar="IDS",
        help="candidate accelerators to compare, comma-separated (default: the project's saved comparison, "
        "as the window's Compare tab left it, else the scenarios' own)",
    )
    from workbench.cli.compare import _add_targets

    _add_targets(report)  # default: the saved comparison's targets
    report.add_argument("--page-size", choices=list(PAGE_SIZES), default="a4", help="paper size (default a4)")
    report.add_argument(
        "--confidence", type=draw_count, metavar="N", default=0,
        help="add the comparison's decision confidence over N Monte Carlo draws of the assumption ranges",
    )  # fmt: skip
    report.add_argument(
        "--iso-sla", action="store_true",
        help="add the comparison at equal service level of the first serving scenario (with its confidence "
        "when --confidence is given)",
    )  # fmt: skip
    report.add_argument("--weights-options", metavar="W,W", help="with --iso-sla: weight precisions allowed (e.g. bf16,fp8)")
    report.add_argument("--author", help="who prepared the report (default: the project's author)")
    report.add_argument("--title", help="report title (default: 'GPU sizing report')")
    from workbench.cli.measure import add_calibration_option

    add_calibration_option(report)  # and the report gains its Calibration section
    report.set_defaults(handler=_cmd_report)


def _has_overrides(args: argparse.Namespace) -> bool:
    flags = any(value is not None for key, value in vars(args).items() if key.startswith("s_"))
    return flags or bool(args.model or args.model_config or args.assumption_overrides)


def _with_scenario(args: argparse.Namespace, scenario: str | None) -> argparse.Namespace:
    single = copy.copy(args)
    single.scenario = scenario
    return single


def _project_and_names(args: argparse.Namespace) -> tuple[Project, tuple[str, ...]]:
    from workbench.cli.scenario_flags import project_from_args, scenario_from_args

    if args.project:
        project = project_from_args(args)
        assert project is not None
        names = tuple(dict.fromkeys(args.scenario))
        for name in names:
            try:
                project.scenario(name)
            except KeyError as exc:
                raise InputError(f"{args.project}: {exc.args[0]}") from None
        if _has_overrides(args):
            chosen = set(names or (s.name for s in project.scenarios))
            scenarios = tuple(
                scenario_from_args(_with_scenario(args, s.name), project) if s.name in chosen else s
                for s in project.scenarios
            )
            project = Project.model_validate({**project.model_dump(), "scenarios": scenarios})
        return project, names
    if len(args.scenario) > 1:
        raise InputError("--scenario: without --project, give one scenario file (or none, and flags)")
    scenario = scenario_from_args(_with_scenario(args, args.scenario[0] if args.scenario else None))
    if args.s_name is None and scenario.name == "Scenario":
        scenario = scenario.model_copy(
            update={"name": f"{scenario.model} on {scenario.num_gpus}x {scenario.gpu}"}
        )
    return Project(name=scenario.name, author=args.author or "", scenarios=(scenario,)), ()


def _check_output(path: Path) -> None:
    """Refuse an output that cannot be written before any estimate runs."""
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a file name for the report")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{path}: folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{path}: the file exists and is read-only")


def _cmd_report(args: argparse.Namespace) -> int:
    from workbench.catalog.resolve import resolve_accelerator
    from workbench.report.document import ReportRequest, parse_sections
    from workbench.report.pdf import export_report
    from workbench.report.sections import available_sections

    output = Path(args.output)
    _check_output(output)
    project, names = _project_and_names(args)
    sections = parse_sections(args.sections, [s.id for s in available_sections()])
    candidates = tuple(dict.fromkeys(c.strip() for c in (args.gpus_list or "").split(",") if c.strip()))
    for ident in candidates:
        resolve_accelerator(ident, project)  # an unknown id is refused before anything runs
    from workbench.cli.compare import _targets
    from workbench.engine.compare import Targets

    from workbench.cli.measure import load_calibration

    targets = _targets(args)
    profile = load_calibration(args)
    request = ReportRequest(
        project=project,
        scenarios=names,
        sections=sections,
        candidates=candidates,
        targets=None if targets == Targets() else targets,  # none given: the saved comparison's
        page_size=args.page_size,
        confidence_draws=args.confidence,
        iso_sla=args.iso_sla,
        weights_options=tuple(w.strip() for w in (args.weights_options or "").split(",") if w.strip()),
        author=args.author,
        calibration=profile,
        **({"title": args.title} if args.title else {}),
    )
    result = export_report(request, output)
    count = len(names) or len(project.scenarios)
    print(
        f"wrote {output} ({result.pages} pages, {count} scenario{'s' if count != 1 else ''}) "
        f"in {result.seconds:.2f} s" + (f"; {profile.mark()} (profile '{profile.name}')" if profile else "")
    )
    return 0
