"""Export launch configurations: the one place the CLI and the window find and run exporters.

Exporters come from plugins (``workbench_register_exporters``). What one returns is checked
before anyone writes it: a mapping of plain file names to text. A mistake a user can make (an
unknown format, a training format for a serving scenario) is an :class:`InputError` line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from workbench.core import atomic_write
from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario
from workbench.engine import guard

_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def exporters() -> dict[str, Any]:
    """Every registered exporter by format id, in registration order (first-party first)."""
    from workbench.pluginhost import get_host

    return {e.info.id: e for e in get_host().registry.exporters}


def find(format_id: str) -> Any:
    found = exporters()
    if format_id not in found:
        raise InputError(f"unknown export format '{format_id}'; formats: {', '.join(found)} (or `--to list`)")
    return found[format_id]


def applies(exporter: Any, resolved: ResolvedScenario) -> bool:
    return resolved.scenario.workload in exporter.info.workloads


def require_applicable(exporter: Any, resolved: ResolvedScenario) -> None:
    """An :class:`InputError` line when the format is for the other kind of workload."""
    if not applies(exporter, resolved):
        info = exporter.info
        kinds = ", ".join(w.value for w in info.workloads)
        raise InputError(f"export {info.id}: {info.title} is for {kinds} scenarios; "
                         f"this one is {resolved.scenario.workload.value}")


def run(exporter: Any, resolved: ResolvedScenario, estimate: Any) -> dict[str, str]:
    """The exporter's files for ``resolved``, checked."""
    info = exporter.info
    require_applicable(exporter, resolved)
    try:
        files = exporter.export(resolved, estimate)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a broken exporter is one line, not a traceback
        raise InputError(f"export {info.id} failed: {guard.describe(exc)}") from None
    if not isinstance(files, dict) or not files:
        raise InputError(f"export {info.id} returned {type(files).__name__}, not a mapping of file names to text")
    for name, text in files.items():
        if not isinstance(name, str) or not _FILE_NAME.match(name) or name in (".", ".."):
            raise InputError(f"export {info.id} returned a file name that is not a plain name: {name!r:.60}")
        if not isinstance(text, str):
            raise InputError(f"export {info.id}: {name} holds {type(text).__name__}, not text")
    return dict(files)


def write(files: dict[str, str], target: Path) -> list[Path]:
    """One file: written at ``target``. Several: ``target`` is a folder (made if missing) that
    receives each by name. Every file is written atomically; returns the paths written."""
    if len(files) == 1:
        ((name, text),) = files.items()
        # The check follows what the text is (the exporter's name for it), not what the user named it.
        atomic_write.write_text(target, text, verify=_verifier(name), what="the export")
        return [target]
    if target.exists() and not target.is_dir():
        raise InputError(f"{target}: the export has {len(files)} files ({', '.join(files)}); "
                         "give a folder, not a file")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{target}: cannot create the folder: {exc.strerror or exc}") from None
    written = []
    for name, text in files.items():
        path = target / name
        atomic_write.write_text(path, text, verify=_verifier(name), what="the export")
        written.append(path)
    return written


def _verifier(name: str) -> Any:
    return atomic_write.verify_json if name.endswith(".json") else None


def listing() -> list[dict[str, Any]]:
    """Each format with its engine and version (``export --to list``)."""
    return [
        {"id": e.info.id, "title": e.info.title, "engine": e.info.engine, "engine_version": e.info.engine_version,
         "workloads": [w.value for w in e.info.workloads], "source": e.info.source}
        for e in exporters().values()
    ]
