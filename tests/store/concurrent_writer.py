"""A process that adds scenarios to a shared project under the project lock (see the test)."""

from __future__ import annotations

from multiprocessing.synchronize import Barrier

from workbench.core import Project, Scenario
from workbench.store import ProjectLockedError, open_project, save_project
from workbench.store.lock import WRITE, ProjectLock


def add_scenarios(path: str, writer: int, count: int, barrier: Barrier, wait_s: float, spin: int) -> list[str]:
    """Add ``count`` scenarios, one read-modify-write each; returns the names it reported saved.

    A refused writer retries at once up to ``spin`` times: many takers hammering the lock at the
    same moment is what exposes a lock that two of them can take together.
    """
    barrier.wait()
    saved = []
    for i in range(count):
        name = f"w{writer}-{i}"
        lock = ProjectLock(path)
        for _ in range(spin + 1):
            try:
                lock.acquire(purpose=WRITE, wait_s=wait_s)
                break
            except ProjectLockedError:
                continue
        if not lock.held:
            continue
        try:
            project = open_project(path)
            scenario = Scenario(name=name, model="llama-3.1-8b", gpu="h100-sxm")
            save_project(Project.model_validate({**project.model_dump(), "scenarios": [*project.scenarios, scenario]}),
                         path)
            saved.append(name)
        finally:
            lock.release()
    return saved
