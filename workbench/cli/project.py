"""`gpu-workbench project ...`: create and edit project files without the window."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from workbench.cli.output import emit_json
from workbench.core.errors import InputError
from workbench.core.project import Project


def _emit(document: Any) -> None:
    emit_json(document, sys.stdout)


#: How long a command waits for another command that is writing the same project (an edit takes
#: a fraction of a second); a window that has the project open is reported at once.
WRITE_WAIT_S = 10.0


def _writing(path: str | Path) -> AbstractContextManager[None]:
    """Hold the project's lock for a whole read-modify-write, so two writers never lose an edit."""
    from workbench.store.lock import writing

    return writing(path, WRITE_WAIT_S)


def _locked_edit(path: str, edit: Any) -> Project:
    """Open, change and save a project while holding its lock (refused if the window has it)."""
    from workbench.store import open_project, save_project

    with _writing(path):
        project = edit(open_project(path))
        return save_project(project, path)


def _create(path: Path, project: Project, force: bool, hint: str) -> None:
    """Write a new project file; an existing one only with ``force`` (and never under a writer)."""
    from workbench.store import save_project

    with _writing(path):
        if path.exists() and not force:
            raise InputError(f"{path}: already exists (use --force to {hint})")
        save_project(project, path)


def _cmd_new(args: argparse.Namespace) -> int:
    path = Path(args.file)
    from pydantic import ValidationError

    from workbench.core.errors import describe_validation_error

    try:
        project = Project(name=args.name or path.stem, author=args.author or "")
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "project")) from None
    _create(path, project, args.force, "replace it")
    print(f"created {path}")
    return 0


def _with_scenario(project: Project, scenario: Any, project_path: str) -> Project:
    from pydantic import ValidationError

    from workbench.core.errors import describe_validation_error

    if any(s.name == scenario.name for s in project.scenarios):
        raise InputError(f"{project_path}: a scenario named '{scenario.name}' exists already")
    try:
        return Project.model_validate({**project.model_dump(), "scenarios": [*project.scenarios, scenario]})
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, project_path)) from None


def _cmd_add_scenario(args: argparse.Namespace) -> int:
    from workbench.catalog.resolve import resolve_scenario
    from workbench.cli.scenario_flags import scenario_from_args

    project_path = args.project_file
    args.project = None  # the scenario comes from flags / a scenario file, not from the project
    scenario = scenario_from_args(args)

    def add(project: Project) -> Project:
        resolve_scenario(scenario, project)  # unknown ids are refused before saving
        return _with_scenario(project, scenario, project_path)

    _locked_edit(project_path, add)
    print(f"added scenario '{scenario.name}' to {project_path}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from workbench.store import open_project

    project = open_project(args.file)
    if args.json:
        _emit({
            "name": project.name,
            "author": project.author,
            "created": project.created.isoformat(),
            "modified": project.modified.isoformat(),
            "models": sorted(project.models),
            "accelerators": sorted(project.accelerators),
            "scenarios": [
                {"name": s.name, "model": s.model, "gpu": s.gpu, "num_gpus": s.num_gpus, "workload": s.workload.value}
                for s in project.scenarios
            ],
        })
        return 0
    print(f"{project.name}  ({len(project.scenarios)} scenarios, modified {project.modified:%Y-%m-%d %H:%M} UTC)")
    for s in project.scenarios:
        print(f"  {s.name:<32} {s.workload.value:<10} {s.model:<24} {s.num_gpus} x {s.gpu}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from workbench.store import export_json, open_project

    project = open_project(args.file)
    if args.scenario:
        try:
            text = project.scenario(args.scenario).model_dump_json(indent=2)
        except KeyError as exc:
            raise InputError(f"{args.file}: {exc.args[0]}") from None
    else:
        text = export_json(project)
    if args.output:
        from workbench.core.atomic_write import verify_json, write_text

        write_text(args.output, text + "\n", verify=verify_json, what="the export")
    else:
        sys.stdout.write(text + "\n")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from workbench.cli.scenario_flags import read_input_text
    from workbench.store import import_json, scenario_from_json

    source = Path(args.json_file)
    text = read_input_text(source, "JSON file")
    target = Path(args.file)
    try:
        is_scenario = "scenarios" not in json.loads(text)
    except (json.JSONDecodeError, TypeError):
        raise InputError(f"{source}: not valid JSON") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to read") from None
    except ValueError:  # an integer of more than 4,300 digits
        raise InputError(f"{source}: a number is too large (more than 4,300 digits)") from None
    if is_scenario:
        scenario = scenario_from_json(text, str(source))
        from workbench.engine.assumptions import check_overrides
        from workbench.pluginhost import default_engine

        try:  # the same ranges as --set and scenario files
            check_overrides(default_engine().assumptions, scenario.assumptions)
        except ValueError as exc:
            raise InputError(f"{source}: {exc}") from None
        _locked_edit(str(target), lambda p: _with_scenario(p, scenario, str(target)))
        print(f"added scenario '{scenario.name}' to {target}")
        return 0
    _create(target, import_json(text, str(source)), args.force, "replace it with the imported project")
    print(f"wrote {target}")
    return 0


def add_project_commands(sub: Any, parser_class: type, add_scenario_flags: Any) -> None:
    project = sub.add_parser("project", help="create, list, edit, import and export project files")
    commands = project.add_subparsers(dest="project_command", metavar="ACTION", required=True,
                                      parser_class=parser_class)

    new = commands.add_parser("new", help="create an empty project file")
    new.add_argument("file")
    new.add_argument("--name", help="project name (default: the file name)")
    new.add_argument("--author", help="who prepares the sizing")
    new.add_argument("--force", action="store_true", help="replace an existing file")
    new.set_defaults(handler=_cmd_new)

    add = commands.add_parser("add-scenario", help="add a scenario described by scenario flags")
    add.add_argument("project_file", metavar="FILE")
    add_scenario_flags(add)
    add.set_defaults(handler=_cmd_add_scenario)

    lst = commands.add_parser("list", help="list a project's scenarios")
    lst.add_argument("file")
    lst.add_argument("--json", action="store_true", help="one JSON document on stdout")
    lst.set_defaults(handler=_cmd_list)

    exp = commands.add_parser("export", help="a project (or one scenario) as JSON")
    exp.add_argument("file")
    exp.add_argument("--scenario", metavar="NAME", help="export only this scenario")
    exp.add_argument("-o", "--output", help="write here instead of stdout")
    exp.set_defaults(handler=_cmd_export)

    imp = commands.add_parser("import", help="a project JSON into a new file, or a scenario JSON into a project")
    imp.add_argument("file", help="project file to write or extend")
    imp.add_argument("json_file", metavar="JSON")
    imp.add_argument("--force", action="store_true", help="replace an existing project file")
    imp.set_defaults(handler=_cmd_import)
