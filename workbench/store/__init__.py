"""Project files in SQLite (sqlite-utils), atomic saves, autosave recovery and locks. No Qt."""

from workbench.store.estimate_cache import input_hash, load_estimates, save_estimates
from workbench.store.lock import ProjectLock, ProjectLockedError
from workbench.store.project_file import (
    SUFFIX,
    ProjectFileError,
    check_project_file,
    export_json,
    import_json,
    open_project,
    read_only_reason,
    save_project,
    scenario_from_json,
)
from workbench.store.recovery import Recovery, discard_recovery, pending_recoveries, write_recovery

__all__ = [
    "SUFFIX",
    "ProjectFileError",
    "ProjectLock",
    "ProjectLockedError",
    "Recovery",
    "check_project_file",
    "discard_recovery",
    "export_json",
    "import_json",
    "input_hash",
    "load_estimates",
    "open_project",
    "pending_recoveries",
    "read_only_reason",
    "save_estimates",
    "save_project",
    "scenario_from_json",
    "write_recovery",
]
