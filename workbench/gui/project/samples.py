"""The first-launch sample project and the starting point of a new project."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.paths import resources_dir


def sample_path() -> Path:
    return resources_dir() / "samples" / "sample_project.json"


def new_project() -> Project:
    """A new project: one scenario on a well-known model and GPU, so the charts are never empty."""
    scenario = Scenario(name="Llama-3.1-8B on 1x H100", model="llama-3.1-8b", gpu="h100-sxm", batch_size=8)
    return Project(name="Untitled project", scenarios=(scenario,))


def sample_project() -> Project:
    """The bundled sample (a few scenarios on well-known models and GPUs); a new project if it is missing."""
    try:
        return Project.model_validate_json(sample_path().read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return new_project()
