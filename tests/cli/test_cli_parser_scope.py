"""A command the main module defines is parsed by a parser without the other command groups: the
same arguments, and none of the comparison engine's, the report's or the exporters' imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbench.cli.main import OWN_COMMANDS, build_parser

ARGS = {
    "sweep": ["sweep", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--vary", "batch=1,2", "--format", "csv"],
    "estimate": ["estimate", "--model", "llama-3.1-8b", "--gpu", "l40s", "--workload", "finetune", "--json"],
    "catalog": ["catalog", "gpus"],
    "import": ["import", "config.json"],
    "scenario": ["scenario", "--model", "llama-3.1-8b", "--batch", "4"],
    "assumptions": ["assumptions", "--markdown"],
    "plugins": ["plugins", "--json"],
}


@pytest.mark.parametrize("command", sorted(OWN_COMMANDS))
def test_the_narrow_parser_reads_the_same_arguments(command: str) -> None:
    argv = ARGS[command]
    whole = vars(build_parser().parse_args(argv))
    narrow = vars(build_parser(command).parse_args(argv))
    assert narrow == whole


def test_the_whole_help_lists_every_command_group(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli.main import main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("compare", "report", "measure", "export", "project", "sensitivity", "sweep"):
        assert command in out


def test_a_sweep_does_not_import_the_other_command_groups_nor_the_gguf_tables() -> None:
    code = (
        "import sys; from workbench.cli import main; "
        f"code = main({ARGS['sweep']!r}); "
        "print(sorted(m for m in ('workbench.engine.compare', 'workbench.cli.compare', 'workbench.report.document',"
        " 'workbench.cli.export', 'workbench.measure', 'workbench.core.gguf', 'workbench_export.exporters') if m in sys.modules), file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 3  # header and two points
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_the_registered_exporters_are_the_exporters_and_load_their_code_on_first_use() -> None:
    code = (
        "import sys; from workbench.pluginhost import get_host; from workbench.launch_export import exporters; "
        "found = list(exporters().values()); print('workbench_export.exporters' in sys.modules); "
        "import workbench_export; "
        "print(sorted((e.info.id, e.info.model_dump_json()) for e in found) == "
        "sorted((e.info.id, e.info.model_dump_json()) for e in workbench_export.ALL))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]
