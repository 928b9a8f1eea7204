"""Tell a user when another running workbench has the same project open.

A lock file ``<project>.lock`` beside the project holds the owner's host and PID. A lock whose
process is gone (a crash) is stale and is taken over silently.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from workbench.core.errors import InputError


class ProjectLockedError(InputError):
    """Another running instance holds the project."""


def lock_path(project_path: str | Path) -> Path:
    path = Path(project_path)
    return path.with_name(path.name + ".lock")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ProjectLock:
    """Hold the lock while a project is open in this process; ``release()`` when closing it."""

    def __init__(self, project_path: str | Path) -> None:
        self.path = lock_path(project_path)
        self.held = False

    def owner(self) -> dict[str, object] | None:
        """The live owner of the lock, or None when free or stale."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            host, pid = str(data["host"]), int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if pid == os.getpid() and host == socket.gethostname():
            return None
        if host == socket.gethostname() and not _alive(pid):
            return None
        return {"host": host, "pid": pid}

    def acquire(self) -> None:
        owner = self.owner()
        if owner is not None:
            raise ProjectLockedError(
                f"{self.path.with_suffix('')}: already open in another workbench (process {owner['pid']} "
                f"on {owner['host']}); close it there first, or open a copy"
            )
        payload = json.dumps({"host": socket.gethostname(), "pid": os.getpid()})
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}")
        try:
            tmp.write_text(payload, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
            return  # read-only folder: opening still works, the lock is best effort
        self.held = True

    def release(self) -> None:
        if self.held:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if int(data.get("pid", -1)) == os.getpid():
                    self.path.unlink()
            except (OSError, ValueError):
                pass
            self.held = False
