"""`gpu-workbench report`: both forms (project, flags), mistakes in one line, headless, no partial file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.store import save_project

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")


def _text(pdf: Path) -> str:
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    )
    return unicodedata.normalize("NFKC", out.stdout)


@pytest.fixture
def project_file(tmp_path: Path) -> Path:
    path = tmp_path / "plan.gpuwb"
    save_project(
        Project(
            name="Inference plan",
            author="Grace",
            scenarios=(
                Scenario(name="serve-8b", model="llama-3.1-8b", gpu="h100-sxm", batch_size=32),
                Scenario(
                    name="serve-70b", model="llama-3.1-70b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 4}
                ),
                Scenario(
                    name="lora-8b", model="llama-3.1-8b", gpu="l40s", workload="finetune", method="lora"
                ),
            ),
        ),
        path,
    )
    return path


def test_report_from_a_project(qapp, project_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out_pdf = tmp_path / "out" / "plan.pdf"
    out_pdf.parent.mkdir()
    code, out, err = run_cli(
        capsys,
        "report",
        "--project",
        str(project_file),
        "--scenario",
        "serve-8b",
        "--scenario",
        "serve-70b",
        "--sections",
        "cover,summary,comparison,warnings",
        "--gpus-list",
        "h100-sxm,a100-80gb-sxm",
        "-o",
        str(out_pdf),
    )
    assert code == 0, err
    assert out.startswith(f"wrote {out_pdf} (") and "2 scenarios" in out
    text = _text(out_pdf)
    assert "Inference plan" in text and "Grace" in text
    assert "serve-8b" in text and "serve-70b" in text and "lora-8b" not in text
    assert "Comparison" in text and "Recommendation" in text and "NVIDIA A100 80 GB SXM4" in text
    assert "Roofline" not in text and "Memory per GPU" not in text
    assert sorted(p.name for p in out_pdf.parent.iterdir()) == ["plan.pdf"]


def test_report_from_flags(qapp, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.api import estimate
    from workbench.explain import format_quantity

    out_pdf = tmp_path / "one.pdf"
    code, out, err = run_cli(
        capsys,
        "report",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--batch",
        "8",
        "--page-size",
        "letter",
        "--author",
        "Ada",
        "-o",
        str(out_pdf),
    )
    assert code == 0, err
    assert "1 scenario)" in out
    text = _text(out_pdf)
    expected = estimate(model="llama-3.1-8b", gpu="h100-sxm", batch_size=8, num_gpus=1)
    assert format_quantity(expected.values["memory.per_gpu.total"]) in text
    assert "llama-3.1-8b on 1x h100-sxm" in text and "Ada" in text
    assert "Roofline" in text and "Sensitivity" in text


def test_project_flags_override_every_chosen_scenario(
    qapp,
    project_file: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    capsys,
) -> None:
    out_pdf = tmp_path / "b64.pdf"
    code, _, err = run_cli(
        capsys,
        "report",
        "--project",
        str(project_file),
        "--scenario",
        "serve-8b",
        "--batch",
        "64",
        "--sections",
        "inputs",
        "-o",
        str(out_pdf),
    )
    assert code == 0, err
    assert "64 sequences" in _text(out_pdf)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--project", "{missing}", "-o", "{out}"], "missing.gpuwb"),
        (["--project", "{project}", "--scenario", "ghost", "-o", "{out}"], "ghost"),
        (["--project", "{project}", "--sections", "cover,charts", "-o", "{out}"], "unknown section 'charts'"),
        (["--project", "{project}", "--gpus-list", "h100-sxm,nope-gpu", "-o", "{out}"], "nope-gpu"),
        (["--project", "{project}", "-o", "{nofolder}"], "does not exist"),
        (["--project", "{project}", "-o", "{folder}"], "is a folder"),
        (["--model", "no-such-model", "-o", "{out}"], "no-such-model"),
        (
            ["--model", "llama-3.1-8b", "--scenario", "a.json", "--scenario", "b.json", "-o", "{out}"],
            "one scenario",
        ),
    ],
)
def test_mistakes_are_one_line_and_write_nothing(
    qapp,
    project_file: Path,
    tmp_path: Path,
    capsys,  # type: ignore[no-untyped-def]
    argv: list[str],
    needle: str,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    values = {
        "missing": str(tmp_path / "missing.gpuwb"),
        "project": str(project_file),
        "out": str(work / "r.pdf"),
        "nofolder": str(tmp_path / "nowhere" / "r.pdf"),
        "folder": str(work),
    }
    code, out, err = run_cli(capsys, "report", *(a.format(**values) for a in argv))
    assert_one_line_error(code, out, err, needle)
    assert list(work.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_unwritable_folder(qapp, project_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code, out, err = run_cli(
            capsys, "report", "--project", str(project_file), "-o", str(locked / "r.pdf")
        )
        assert_one_line_error(code, out, err, "not writable")
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs (not writable, even by root)")
def test_folder_that_refuses_files(qapp, project_file: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(
        capsys,
        "report",
        "--project",
        str(project_file),
        "--sections",
        "cover",
        "-o",
        "/sys/kernel/gpu-workbench-report.pdf",
    )
    assert_one_line_error(code, out, err, "gpu-workbench-report.pdf")
    assert not Path("/sys/kernel/gpu-workbench-report.pdf").exists()


def test_missing_output_is_a_usage_error(capsys) -> None:  # type: ignore[no-untyped-def]
    code, _out, err = run_cli(capsys, "report", "--model", "llama-3.1-8b")
    assert code == 2 and "-o/--output" in err and len(err.strip().splitlines()) == 1


def test_headless_without_display(project_file: Path, tmp_path: Path) -> None:
    """A fresh process with no display and no Qt platform set: the CLI makes its own offscreen app."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    out_pdf = tmp_path / "headless.pdf"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench",
            "report",
            "--project",
            str(project_file),
            "--sections",
            "cover,summary",
            "-o",
            str(out_pdf),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "Executive summary" in _text(out_pdf)


def test_report_uses_the_projects_saved_comparison(qapp, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`report --project` compares the candidates and targets the Compare tab saved; target flags
    replace the saved targets."""
    from workbench.core.project import Comparison

    serve = Scenario(name="chat", model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", batch_size=32)
    saved = Comparison(name="Compare tab", accelerators=("h100-sxm", "h200-sxm"), max_tpot_s=0.06)
    path = tmp_path / "saved.gpuwb"
    save_project(Project(name="Saved", scenarios=(serve,), comparisons=(saved,)), path)

    out = tmp_path / "saved.pdf"
    code, _, err = run_cli(capsys, "report", "--project", str(path), "--sections", "comparison", "-o", str(out))
    assert code == 0, err
    text = " ".join(_text(out).split())
    assert "Targets: TPOT at most 60 ms" in text and "h200-sxm" in text

    looser = tmp_path / "looser.pdf"
    code, _, err = run_cli(capsys, "report", "--project", str(path), "--sections", "comparison",
                           "--max-tpot", "0.1", "-o", str(looser))
    assert code == 0, err
    assert "Targets: TPOT at most 100 ms" in " ".join(_text(looser).split())
