"""Several `project add-scenario` processes on one file at the same moment: no edit is lost.

Each process imports the CLI, says "ready", and waits on its stdin; when all are ready, the
test releases them together (a barrier), so the read-modify-writes really overlap. Every command
either lands its scenario or fails cleanly (exit 2, one line naming the writer that holds it).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.core import Project
from workbench.store import open_project, save_project

RUNNER = textwrap.dedent("""
    import sys
    from workbench.cli import main
    from workbench.store import open_project  # the store is loaded before the barrier
    print("ready", flush=True)
    sys.stdin.readline()
    sys.exit(main(sys.argv[1:]))
""")

WRITERS = 8
ROUNDS = 3


def _add(project: Path, name: str) -> list[str]:
    return [sys.executable, "-c", RUNNER, "project", "add-scenario", str(project), "--name", name,
            "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "4"]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_simultaneous_add_scenario_loses_nothing(tmp_path: Path, round_: int) -> None:
    path = tmp_path / "shared.gpuwb"
    save_project(Project(name="shared"), path)
    names = [f"writer-{round_}-{i}" for i in range(WRITERS)]
    procs = [subprocess.Popen(_add(path, name), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for name in names]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:  # the barrier opens: all of them start their edit now
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [(proc.wait(timeout=60), proc.stdout.read(), proc.stderr.read())  # type: ignore[union-attr]
                   for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    landed = {s.name for s in open_project(path).scenarios}
    succeeded = {name for name, (code, _, _) in zip(names, results, strict=True) if code == 0}
    assert succeeded <= landed <= set(names)
    for name, (code, out, err) in zip(names, results, strict=True):
        if code == 0:
            assert out.strip() == f"added scenario '{name}' to {path}" and err == ""
        else:
            assert code == 2 and "Traceback" not in err, err
            assert len(err.strip().splitlines()) == 1 and "being written by another process" in err
    # Writers wait for each other (an edit takes milliseconds): here all of them land.
    assert succeeded == set(names)
    assert not [p.name for p in tmp_path.iterdir() if p.name not in ("shared.gpuwb",)]


HOLD_WRITE = textwrap.dedent("""
    import sys, time
    from workbench.store.lock import WRITE, ProjectLock
    ProjectLock(sys.argv[1]).acquire(purpose=WRITE)
    print("locked", flush=True)
    time.sleep(60)
""")


def test_a_writer_that_holds_too_long_is_reported_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.cli import project as cli_project

    path = tmp_path / "shared.gpuwb"
    run_cli(capsys, "project", "new", str(path))
    before = path.read_bytes()
    monkeypatch.setattr(cli_project, "WRITE_WAIT_S", 0.3)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITE, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = run_cli(capsys, "project", "add-scenario", str(path), "--name", "late", "--model", "llama-3.1-8b",
                         "--gpu", "h100-sxm")
        assert_one_line_error(*result, f"project is being written by another process (pid {holder.pid}); try again")
        assert_one_line_error(*run_cli(capsys, "project", "new", str(path), "--force"), f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    assert path.read_bytes() == before
    # The holder died: its lock is stale and the next writer takes it over.
    assert run_cli(capsys, "project", "add-scenario", str(path), "--name", "late", "--model", "llama-3.1-8b",
                   "--gpu", "h100-sxm")[0] == 0
    assert [s.name for s in open_project(path).scenarios] == ["late"]
    assert not (tmp_path / "shared.gpuwb.lock").exists()


HOLD_OPEN = textwrap.dedent("""
    import sys, time
    from workbench.store import ProjectLock
    ProjectLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    time.sleep(60)
""")


def test_a_project_open_in_a_window_is_not_written_by_commands(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "open.gpuwb"
    run_cli(capsys, "project", "new", str(path))
    before = path.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        result = run_cli(capsys, "project", "add-scenario", str(path), "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
        assert_one_line_error(*result, f"already open in another workbench (process {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    assert path.read_bytes() == before
