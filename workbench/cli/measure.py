"""`gpu-workbench measure import|list`, `gpu-workbench calibrate`, and `estimate --calibration`.

A measurement belongs to a project scenario: ``--scenario NAME`` names one the project has (its
fields, with any scenario flags on top), or a new one built from the flags and what the result
file states (model, GPU), added in the same save as the measurements.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from workbench.cli.output import emit_json
from workbench.core.errors import InputError


def _need_project(args: argparse.Namespace) -> str:
    if not getattr(args, "project", None):
        raise InputError(f"{args.command}: name the project file with --project FILE "
                         "(create one with `gpu-workbench project new FILE`)")
    return str(args.project)


def _metrics_text(metrics: dict[str, float]) -> str:
    from workbench.measure.model import METRICS

    parts = []
    for key, value in metrics.items():
        metric = METRICS[key]
        shown = f"{value * 1000:.4g} ms" if metric.unit == "s" and value < 10 else f"{_num(value)} {metric.unit}"
        parts.append(f"{metric.title} {shown}")
    return ", ".join(parts)


# --- measure import / list ------------------------------------------------------------------------


def _cmd_import(args: argparse.Namespace) -> int:
    from workbench.cli.scenario_flags import scenario_from_args
    from workbench.core.project import Project
    from workbench.measure.readers import read_measurements
    from workbench.measure.scenario_match import catalog_gpu, catalog_model
    from workbench.measure.stored import prepare_import, store_import
    from workbench.store import open_project

    project_path = _need_project(args)
    project = open_project(project_path)
    measurements = read_measurements(args.file)
    name = args.scenario
    existing = name is not None and any(s.name == name for s in project.scenarios)
    if existing:
        base = scenario_from_args(args, project)
    else:
        first = measurements[0]
        if not args.model and not args.model_config and first.model:
            args.model = catalog_model(first.model)
        if args.s_gpu is None and first.gpu:
            args.s_gpu = catalog_gpu(first.gpu, project)
        if args.s_workload is None and first.workload == "training":
            args.s_workload = "pretrain"
        if args.model is None and args.model_config is None:
            said = f" (the file names '{first.model[:60]}', not a catalog model)" if first.model else ""
            raise InputError(f"measure import: no scenario '{name}' in {project_path}; give --model for a new "
                             f"scenario{said}" if name else f"measure import: give --scenario NAME of a scenario "
                             f"in {project_path}, or --model for a new one{said}")
        args.project, args.scenario = None, None
        if args.s_name is None:
            args.s_name = name or f"measured {Path(args.file).stem}"[:200]
        base = scenario_from_args(args)
        args.project = project_path
        if any(s.name == base.name for s in project.scenarios):
            raise InputError(f"measure import: {project_path} has a scenario named '{base.name}' already; "
                             "name it with --scenario to add the measurements to it")

    prepared = prepare_import(measurements, base, project)
    edit = None
    if not existing:
        # the new scenario is the first run as the file states it, so the plan matches what ran
        new = prepared[0][1]

        def edit(p: Project) -> Project:
            from pydantic import ValidationError

            from workbench.core.errors import describe_validation_error

            try:  # another writer may have added a scenario of that name since the project was read
                return Project.model_validate({**p.model_dump(), "scenarios": [*p.scenarios, new]})
            except ValidationError as exc:
                raise InputError(describe_validation_error(exc, project_path)) from None

    ids = store_import(project_path, base.name, prepared, edit)
    if args.json:
        emit_json({"project": project_path, "scenario": base.name, "added_scenario": edit is not None,
                   "imported": [{"id": i, "measurement": m.model_dump(mode="json"), "scenario": s.model_dump(mode="json")}
                                for i, (m, s) in zip(ids, prepared, strict=True)]}, sys.stdout)
        return 0
    added = " (new scenario)" if edit is not None else ""
    print(f"imported {len(ids)} measurement{'s' if len(ids) != 1 else ''} from {Path(args.file).name} "
          f"({prepared[0][0].source_format}) into {project_path}, scenario '{base.name}'{added}")
    for ident, (m, s) in zip(ids, prepared, strict=True):
        print(f"  #{ident} {m.record + ': ' if m.record else ''}{s.model}, {s.num_gpus} x {s.gpu}, "
              f"ISL/OSL {s.seq_len}/{s.gen_len}, batch {s.batch_size}: {_metrics_text(m.metrics)}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from workbench.measure.stored import load_measurements

    project_path = _need_project(args)
    found, skipped = load_measurements(project_path)
    if args.scenario:
        found = [m for m in found if m.scenario_name == args.scenario]
    if args.json:
        emit_json({"project": project_path, "measurements": [m.as_dict() for m in found], "skipped": skipped},
                  sys.stdout)
        return 0
    for line in skipped:
        print(f"gpu-workbench: note: skipped damaged {line}", file=sys.stderr)
    if not found:
        print(f"no measurements in {project_path}" + (f" for scenario '{args.scenario}'" if args.scenario else ""))
        return 0
    for m in found:
        s = m.scenario
        print(f"#{m.id:<4} {m.scenario_name:<28} {m.measurement.source_format:<20} {m.measurement.file_name} "
              f"{m.measurement.record}".rstrip())
        print(f"       {s.model}, {s.num_gpus} x {s.gpu}, TP {s.parallel.tp}, ISL/OSL {s.seq_len}/{s.gen_len}, "
              f"batch {s.batch_size}: {_metrics_text(m.measurement.metrics)}")
    return 0


def _cmd_remove(args: argparse.Namespace) -> int:
    from workbench.store.measurements import remove_measurement_rows

    project_path = _need_project(args)
    removed = remove_measurement_rows(project_path, args.ids)
    if removed != len(set(args.ids)):
        # the save only happened if something matched; say which ids were not there
        print(f"gpu-workbench: note: {len(set(args.ids)) - removed} of the ids were not in {project_path}",
              file=sys.stderr)
    print(f"removed {removed} measurement{'s' if removed != 1 else ''} from {project_path}")
    return 0


# --- calibrate ------------------------------------------------------------------------------------


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from workbench.measure.profile import dump_yaml, read_profile_file
    from workbench.measure.session import run_calibration, save_profile
    from workbench.measure.stored import load_measurements
    from workbench.pluginhost import default_engine
    from workbench.store import open_project

    project_path = _need_project(args)
    engine = default_engine()
    if args.import_file:
        profile = read_profile_file(args.import_file, engine.assumptions)
        open_project(project_path)  # a project that cannot be opened is named before anything else
        save_profile(project_path, profile)
        print(f"added calibration '{profile.name}' ({profile.mark()}) to {project_path}")
        return 0
    project = open_project(project_path)
    found, skipped = load_measurements(project_path)
    for line in skipped:
        print(f"gpu-workbench: note: skipped damaged {line}", file=sys.stderr)
    if not found:
        raise InputError(f"calibrate: {project_path} holds no measurements (add some with `measure import`)")
    profile, fit = run_calibration(engine, found, project, gpu=args.gpu, engine_name=args.engine, name=args.name)
    if not args.no_save:
        save_profile(project_path, profile)
    if args.output:
        from workbench.core.atomic_write import write_text

        write_text(args.output, dump_yaml(profile), what="the calibration profile")
    if args.json:
        emit_json({**profile.model_dump(mode="json"), "mark": profile.mark(), "saved": not args.no_save}, sys.stdout)
        return 0
    plural = "s" if profile.measurements != 1 else ""
    print(f"calibration '{profile.name}': {profile.measurements} measurement{plural} of {profile.gpu} / {profile.engine}")
    print(f"  {'assumption':<34} {'default':>9} {'fitted':>9}  {'range':<16} change")
    for p in fit.parameters:
        change = f"{p.value / p.default - 1:+.1%}" if p.moved else "unchanged"
        print(f"  {p.id:<34} {p.default:>9.4g} {p.value:>9.4g}  {p.low:g} to {p.high:g}".ljust(75) + f" {change}")
    print(f"  {'measurement':<34} {'metric':<20} {'measured':>10} {'before':>8} {'after':>8} {'left out':>9}")
    for r in fit.residuals:
        cells = [_pct(r.error(v, r.measured)) for v in (r.before, r.after, r.left_out)]
        print(f"  {r.case[:34]:<34} {r.metric:<20} {_num(r.measured):>10} {cells[0]:>8} {cells[1]:>8} {cells[2]:>9}")
    print("  median |error|: " + ", ".join(f"{label} {_pct(fit.median_abs(key), signed=False)}" for label, key in
                                             (("before", "before"), ("after", "after"), ("left out", "left_out"))))
    for note in fit.notes:
        print(f"  note: {note}")
    where = [] if args.no_save else [f"saved in {project_path} as '{profile.name}'"]
    if args.output:
        where.append(f"wrote {args.output}")
    if where:
        print("  " + "; ".join(where))
    return 0


def _num(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


# --- estimate --calibration -----------------------------------------------------------------------


def load_calibration(args: argparse.Namespace) -> Any:
    """The profile ``--calibration`` names (a YAML file, or with --project a saved profile), or None."""
    ref = getattr(args, "calibration", None)
    if not ref:
        return None
    from workbench.measure.profile import read_profile_file
    from workbench.pluginhost import default_engine

    definitions = default_engine().assumptions
    if Path(ref).is_file() or not getattr(args, "project", None):
        return read_profile_file(ref, definitions)
    from workbench.measure.session import load_profiles

    profiles, _ = load_profiles(args.project, definitions)
    if ref not in profiles:
        have = ", ".join(sorted(profiles)) or "none"
        raise InputError(f"--calibration: no file '{ref}' and no calibration of that name in {args.project} "
                         f"(calibrations: {have})")
    return profiles[ref]


def calibrated(args: argparse.Namespace, resolved: Any) -> tuple[Any, dict[str, Any] | None]:
    """``resolved`` with the profile of ``--calibration`` applied, and the profile's summary."""
    profile = load_calibration(args)
    if profile is None:
        return resolved, None
    from workbench.measure.profile import apply_profile

    return resolved.with_scenario(apply_profile(profile, resolved.scenario)), profile.summary()


def calibrated_scenario(args: argparse.Namespace, scenario: Any) -> tuple[Any, dict[str, Any] | None]:
    """As :func:`calibrated`, for a scenario not yet resolved."""
    profile = load_calibration(args)
    if profile is None:
        return scenario, None
    from workbench.measure.profile import apply_profile

    return apply_profile(profile, scenario), profile.summary()


class CalibratedResolver:
    """A resolver that calibrates the scenarios (candidates) on the profile's GPU and engine and
    leaves the others as they are, remembering which it calibrated so the output can say so."""

    def __init__(self, profile: Any, resolve: Any) -> None:
        self.profile, self.resolve = profile, resolve
        self.applied: set[str] = set()

    def prepare(self, scenario: Any) -> Any:
        """The scenario as it is estimated (read by ``engine.compare.cached_resolver``)."""
        from workbench.measure.profile import apply_where_fitted, fitted_for

        if fitted_for(self.profile, scenario):
            self.applied.add(scenario.gpu)
        return apply_where_fitted(self.profile, scenario)

    def __call__(self, scenario: Any) -> Any:
        return self.resolve(self.prepare(scenario))

    def summary(self) -> dict[str, Any]:
        return {**self.profile.summary(), "applies_to": f"{self.profile.gpu} / {self.profile.engine}",
                "applied": bool(self.applied)}


def calibrated_resolver(args: argparse.Namespace, resolve: Any) -> Any:
    """``resolve``, calibrated where ``--calibration`` fits (a :class:`CalibratedResolver`), or as is."""
    profile = load_calibration(args)
    return resolve if profile is None else CalibratedResolver(profile, resolve)


def calibration_line(summary: dict[str, Any] | None) -> str | None:
    """The line every calibrated text output starts with."""
    if summary is None:
        return None
    line = f"{summary['mark']} (profile '{summary['name']}')"
    if "applies_to" in summary:
        line = f"{summary['mark']} (profile '{summary['name']}', for {summary['applies_to']}"
        line += ")" if summary["applied"] else "; no estimate here runs on it, so nothing was calibrated)"
    return line


def add_calibration_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--calibration", metavar="FILE|NAME",
        help="apply a calibration profile (a YAML file, or with --project a profile saved in the project) to "
        "the estimates on its GPU and engine; the output says it is calibrated on N measurements (date)")


def add_measure_commands(sub: Any, parser_class: type, add_scenario_flags: Any) -> None:
    measure = sub.add_parser("measure", help="import measured benchmark results into a project, list them")
    commands = measure.add_subparsers(dest="measure_command", metavar="ACTION", required=True,
                                      parser_class=parser_class)
    imp = commands.add_parser(
        "import", help="read a benchmark result file and store its measurements with a scenario",
        description="Reads vllm bench serve / benchmark_serving.py JSON, SGLang bench_serving JSONL, genai-perf "
        "or AIPerf profile export JSON, trtllm-bench report JSON, MLPerf mlperf_log_summary.txt, Megatron-LM or "
        "torchtitan training logs, and CSV (scenario columns + metric columns). --project FILE is required; "
        "--scenario NAME names the project scenario the measurements belong to (a new one is built from the "
        "scenario flags when the project has none of that name).")
    imp.add_argument("file", metavar="FILE", help="the result file")
    add_scenario_flags(imp)
    imp.add_argument("--json", action="store_true", help="one JSON document on stdout")
    imp.set_defaults(handler=_cmd_import)

    lst = commands.add_parser("list", help="the measurements a project holds")
    lst.add_argument("--project", metavar="FILE", help="the project file")
    lst.add_argument("--scenario", metavar="NAME", help="only this scenario's measurements")
    lst.add_argument("--json", action="store_true", help="one JSON document on stdout")
    lst.set_defaults(handler=_cmd_list)

    rem = commands.add_parser("remove", help="delete measurements by id (see `measure list`)")
    rem.add_argument("ids", metavar="ID", type=int, nargs="+", help="measurement ids")
    rem.add_argument("--project", metavar="FILE", help="the project file")
    rem.set_defaults(handler=_cmd_remove)

    cal = sub.add_parser(
        "calibrate", help="fit the efficiency assumptions to a project's measurements of one GPU + engine",
        description="Fits the named efficiency assumptions the estimates read, within their documented ranges, "
        "to the project's measurements of one GPU and engine (robust fit in log space), shows the residuals "
        "before and after with a leave-one-out check, and saves the profile in the project. Apply it with "
        "`estimate --calibration NAME --project FILE` or `--calibration FILE.yaml`.")
    cal.add_argument("--project", metavar="FILE", help="the project file holding the measurements")
    cal.add_argument("--gpu", help="calibrate the measurements of this accelerator id")
    cal.add_argument("--engine", help="... and of this engine (vllm, sglang, tensorrt-llm, generic, training)")
    cal.add_argument("--name", help="profile name (default GPU/engine)")
    cal.add_argument("-o", "--output", metavar="FILE", help="also write the profile as YAML to share")
    cal.add_argument("--import", dest="import_file", metavar="FILE", help="add a shared YAML profile to the project")
    cal.add_argument("--no-save", action="store_true", help="show the fit without saving it in the project")
    cal.add_argument("--json", action="store_true", help="one JSON document on stdout")
    cal.set_defaults(handler=_cmd_calibrate)
