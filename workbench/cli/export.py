"""`gpu-workbench export`: a launch configuration (server command, trainer config, Kubernetes
manifest) from a scenario, in the argument names of a stated engine version.

    gpu-workbench export --to list
    gpu-workbench export --to vllm --model llama-3.1-8b --gpu h100-sxm --batch 32 [-o serve/]

One file is printed (or written to ``-o FILE``); an export of several files (a command and its
benchmark) prints each under a ``==> name <==`` line, or writes them into the folder ``-o DIR``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def add_export_command(sub: Any, add_scenario_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    export = sub.add_parser(
        "export",
        help="write a launch configuration (vLLM/SGLang/TensorRT-LLM command, trainer config, Kubernetes)",
        description="Write the launch configuration of a scenario: `--to list` shows every format with the "
        "engine version whose argument names it follows.",
    )
    export.add_argument("--to", required=True, metavar="FORMAT", help="format id, or `list` to list them")
    add_scenario_flags(export)
    export.add_argument("-o", "--output", metavar="FILE|DIR",
                        help="write the file here (a folder for an export of several files)")
    export.set_defaults(handler=_cmd_export)


def _cmd_export(args: argparse.Namespace) -> int:
    from workbench import launch_export

    if args.to == "list":
        for row in launch_export.listing():
            print(f"{row['id']:<16} {row['engine']} {row['engine_version']}  ({', '.join(row['workloads'])})")
            print(f"    {row['title']}")
        return 0
    exporter = launch_export.find(args.to)  # an unknown format fails before the scenario is read
    from workbench.cli.main import _resolved_from_args
    from workbench.pluginhost import default_engine

    resolved = _resolved_from_args(args)
    launch_export.require_applicable(exporter, resolved)  # before the estimate runs
    files = launch_export.run(exporter, resolved, default_engine().run(resolved))
    if args.output:
        for path in launch_export.write(files, Path(args.output)):
            print(f"wrote {path}", file=sys.stderr)
        return 0
    if len(files) == 1:
        sys.stdout.write(next(iter(files.values())))
        return 0
    for index, (name, text) in enumerate(files.items()):
        sys.stdout.write(("\n" if index else "") + f"==> {name} <==\n{text}")
    return 0
