"""The project controller: panels ask it for edits, it applies them through a QUndoStack.

Projects and scenarios are immutable, so an undo step is simply the project before and after
(plus which scenario was selected): undo and redo swap whole snapshots, which cannot drift out of
step with the edit that made them. Rapid edits of one field (typing digits, spinning a box) merge
into one step.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from workbench.core.errors import describe_validation_error
from workbench.core.hardware import Accelerator
from workbench.core.model import ModelArchitecture
from workbench.core.project import Comparison, Project
from workbench.core.scenario import FinetuneMethod, Scenario
from workbench.gui.catalogs import Catalogs

#: Edits of the same field closer together than this merge into one undo step.
MERGE_WINDOW_S = 1.5
_MERGE_ID = 1

_LABELS = {
    "batch_size": "batch size", "seq_len": "sequence length", "gen_len": "generated tokens",
    "num_gpus": "GPU count", "gpu": "GPU", "model": "model", "dtype": "precision",
}


@dataclass(frozen=True)
class Snapshot:
    project: Project
    current: str


class _SnapshotCommand(QUndoCommand):
    def __init__(self, controller: ProjectController, before: Snapshot, after: Snapshot, text: str,
                 merge_key: str | None) -> None:
        super().__init__(text)
        self._controller = controller
        self.before = before
        self.after = after
        self.merge_key = merge_key
        self.stamp = time.monotonic()

    def redo(self) -> None:
        self._controller._restore(self.after)

    def undo(self) -> None:
        self._controller._restore(self.before)

    def id(self) -> int:  # noqa: A003 - Qt override
        return _MERGE_ID if self.merge_key else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 - Qt override
        if not isinstance(other, _SnapshotCommand) or other.merge_key != self.merge_key:
            return False
        if other.stamp - self.stamp > MERGE_WINDOW_S:
            return False
        self.after = other.after
        self.stamp = other.stamp
        self.setText(other.text())
        return True


def _label(path: str) -> str:
    return _LABELS.get(path, path.split(".")[-1].replace("_", " "))


def _rename_in_comparisons(project: Project, renames: dict[str, str | None]) -> Project:
    """Saved comparisons follow a renamed scenario (None: a deleted one drops out)."""
    if not project.comparisons:
        return project
    def follow(names: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(new for new in (renames.get(name, name) for name in names) if new is not None)

    comparisons = tuple(c.model_copy(update={"scenarios": follow(c.scenarios)}) for c in project.comparisons)
    return project.model_copy(update={"comparisons": comparisons})


def _selected(project: Project) -> str:
    """The scenario to select in ``project``: the one it was saved with, else the first."""
    names = [s.name for s in project.scenarios]
    if project.current_scenario in names:
        return project.current_scenario
    return names[0] if names else ""


_VENDOR = re.compile(r"^(NVIDIA|AMD|Intel|Google Cloud|Google|Apple|AWS)\s+(Instinct\s+|GeForce\s+|Tesla\s+)?",
                     re.IGNORECASE)
#: Product lines whose model number is the second word (``RTX 4090``, ``TPU v5e``).
_SERIES = {"RTX", "TPU", "GAUDI", "ARC", "DGX", "M2", "M3", "M4"}


def unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    stem = re.sub(r" \(\d+\)$", "", base)
    n = 2
    while f"{stem} ({n})" in taken:
        n += 1
    return f"{stem} ({n})"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "model"


class ProjectController(QObject):
    """Holds the open project and the selected scenario; every change goes through here."""

    #: The project or the selected scenario changed (an edit, undo, redo, a new project).
    changed = Signal()
    #: A different project was loaded (New, Open, sample): panels rebuild their lists.
    project_replaced = Signal()

    def __init__(self, catalogs: Catalogs, project: Project | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.catalogs = catalogs
        self.undo_stack = QUndoStack(self)
        self.project: Project = project or Project()
        self.current: str = _selected(self.project)

    # --- state ------------------------------------------------------------------------------

    @property
    def scenario(self) -> Scenario | None:
        for scenario in self.project.scenarios:
            if scenario.name == self.current:
                return scenario
        return None

    def snapshot(self) -> Snapshot:
        return Snapshot(self.project, self.current)

    def _restore(self, snap: Snapshot) -> None:
        self.project, self.current = snap.project, snap.current
        self.changed.emit()

    def _push(self, after: Snapshot, text: str, merge_key: str | None = None) -> None:
        before = self.snapshot()
        if after == before:
            return
        self.undo_stack.push(_SnapshotCommand(self, before, after, text, merge_key))

    def load_project(self, project: Project) -> None:
        """Replace the open project (not undoable: the undo history belongs to the old one)."""
        self.undo_stack.clear()
        self.project = project
        self.current = _selected(project)
        self.project_replaced.emit()
        self.changed.emit()

    def project_to_save(self) -> Project:
        """The project as a file keeps it: with the selected scenario, so reopening shows it (and a
        comparison that follows the selected scenario compares the same one)."""
        if self.project.current_scenario == self.current:
            return self.project
        return self.project.model_copy(update={"current_scenario": self.current})

    def set_current(self, name: str) -> None:
        if name != self.current and any(s.name == name for s in self.project.scenarios):
            self.current = name
            self.changed.emit()

    # --- scenario edits -----------------------------------------------------------------------

    def propose(self, changes: dict[str, Any]) -> tuple[Scenario | None, str | None]:
        """The current scenario with ``changes`` (field path -> value) applied, or why not."""
        base = self.scenario
        if base is None:
            return None, "no scenario is selected"
        data = base.model_dump()
        for path, value in changes.items():
            head, _, tail = path.partition(".")
            if tail:
                data[head] = {**data[head], tail: value}
            else:
                data[head] = value
        self._keep_layout(base, changes, data)
        if changes.get("method") in (FinetuneMethod.QLORA, "qlora") and data.get("weights") not in (None, "nf4", "int4"):
            data["weights"] = None  # QLoRA stores 4-bit weights: drop a 16-bit choice
        try:
            return Scenario.model_validate(data), None
        except ValidationError as exc:
            return None, describe_validation_error(exc)

    @staticmethod
    def _keep_layout(base: Scenario, changes: dict[str, Any], data: dict[str, Any]) -> None:
        """When GPUs, TP or PP change and the layout filled every GPU, DP absorbs the difference."""
        if "parallel.dp" in changes or not ({"num_gpus", "parallel.tp", "parallel.pp"} & changes.keys()):
            return
        if base.parallel.world_size != base.num_gpus:
            return
        par = data["parallel"]
        per_replica = par["tp"] * par["pp"]
        if data["num_gpus"] % per_replica == 0:
            data["parallel"] = {**par, "dp": max(1, data["num_gpus"] // per_replica)}

    def set_fields(self, changes: dict[str, Any], text: str | None = None) -> str | None:
        """Apply ``changes`` to the current scenario as one undo step; the error message if invalid."""
        scenario, error = self.propose(changes)
        if scenario is None:
            return error
        paths = sorted(changes)
        if text is None:
            first = paths[0]
            value = changes[first]
            shown = getattr(value, "value", value)
            text = f"Set {_label(first)} to {shown}" if len(paths) == 1 else f"Edit {', '.join(map(_label, paths))}"
        key = f"field:{self.current}:{','.join(paths)}"
        self._push(self._edited(scenario), text, key)
        return None

    def _edited(self, scenario: Scenario) -> Snapshot:
        """The project with the current scenario replaced by ``scenario``. A name that spells the
        old model or GPU count and GPU ("Llama-3.1-8B chat on 1x H100") follows the edit; a name
        the user chose (without them) stays."""
        old = self.scenario
        name = old.name if old is not None else scenario.name
        new_name = self._following_name(old, scenario) if old is not None else name
        if new_name == name:
            return Snapshot(self._replace_scenario(scenario), self.current)
        new_name = unique_name(new_name, {s.name for s in self.project.scenarios} - {name})
        project = self._replace_scenario(scenario.model_copy(update={"name": new_name}), name)
        return Snapshot(_rename_in_comparisons(project, {name: new_name}), new_name)

    def _following_name(self, old: Scenario, new: Scenario) -> str:
        name = old.name
        if new.model != old.model:
            before, after = self._model_name(old.model), self._model_name(new.model)
            if before and after and before in name:
                name = name.replace(before, after, 1)
        if new.gpu != old.gpu or new.num_gpus != old.num_gpus:
            before, after = self._gpu_word(old.gpu), self._gpu_word(new.gpu)
            pattern = re.compile(rf"\b{old.num_gpus}\s*[x×]\s*{re.escape(before)}(?=\W|$)") if before else None
            if pattern is not None and after and pattern.search(name):
                name = pattern.sub(f"{new.num_gpus}x {after}", name, count=1)
        return name

    def _model_name(self, model_id: str) -> str:
        try:
            return self.catalogs.model(model_id, self.project).name
        except Exception:  # noqa: BLE001 - an unknown model: the name stays as it is
            return ""

    def _gpu_word(self, gpu_id: str) -> str:
        """The GPU as names spell it: ``H100`` for "NVIDIA H100 SXM5 80 GB", ``RTX 4090``."""
        try:
            name = self.catalogs.accelerator(gpu_id, self.project).name
        except Exception:  # noqa: BLE001 - an unknown GPU: the name stays as it is
            return ""
        words = _VENDOR.sub("", name).split()
        if not words:
            return ""
        return " ".join(words[:2]) if words[0].upper() in _SERIES and len(words) > 1 else words[0]

    def apply_changes(self, changes: dict[str, Any], text: str) -> str | None:
        """Apply several field changes (a fix) as one undo step of its own, never merged with
        an edit before or after; the error message if the result is invalid."""
        scenario, error = self.propose(changes)
        if scenario is None:
            return error
        self._push(self._edited(scenario), text)
        return None

    def set_field(self, path: str, value: Any) -> str | None:
        return self.set_fields({path: value})

    def _replace_scenario(self, scenario: Scenario, name: str | None = None) -> Project:
        name = name or self.current
        scenarios = tuple(scenario if s.name == name else s for s in self.project.scenarios)
        return self.project.model_copy(update={"scenarios": scenarios})

    # --- scenario list ------------------------------------------------------------------------

    def add_scenario(self, scenario: Scenario | None = None) -> str:
        """Add a scenario (a default one on the current model and GPU when none is given)."""
        taken = {s.name for s in self.project.scenarios}
        if scenario is None:
            current = self.scenario
            model = current.model if current else next(iter(self.catalogs.models), "llama-3.1-8b")
            gpu = current.gpu if current else "h100-sxm"
            scenario = Scenario(name="New scenario", model=model, gpu=gpu)
        name = unique_name(scenario.name, taken)
        scenario = scenario.model_copy(update={"name": name})
        project = self.project.model_copy(update={"scenarios": (*self.project.scenarios, scenario)})
        self._push(Snapshot(project, name), f"Add scenario {name}")
        return name

    def duplicate_scenario(self) -> str | None:
        current = self.scenario
        if current is None:
            return None
        return self.add_scenario(current.model_copy(update={"name": f"{current.name} (copy)"}))

    def rename_scenario(self, new_name: str) -> str | None:
        new_name = new_name.strip()
        current = self.scenario
        if current is None:
            return "no scenario is selected"
        if not new_name:
            return "a scenario needs a name"
        if new_name != current.name and any(s.name == new_name for s in self.project.scenarios):
            return f"another scenario is already named '{new_name}'"
        renamed = current.model_copy(update={"name": new_name})
        project = _rename_in_comparisons(self._replace_scenario(renamed), {current.name: new_name})
        self._push(Snapshot(project, new_name), f"Rename scenario to {new_name}")
        return None

    def delete_scenario(self) -> bool:
        scenarios = self.project.scenarios
        if len(scenarios) <= 1:
            return False  # a project always keeps one scenario so the charts have something to show
        index = next(i for i, s in enumerate(scenarios) if s.name == self.current)
        remaining = scenarios[:index] + scenarios[index + 1:]
        project = _rename_in_comparisons(
            self.project.model_copy(update={"scenarios": remaining}), {self.current: None}
        )
        self._push(Snapshot(project, remaining[min(index, len(remaining) - 1)].name), f"Delete scenario {self.current}")
        return True

    def can_move_scenario(self, offset: int) -> bool:
        names = [s.name for s in self.project.scenarios]
        return self.current in names and 0 <= names.index(self.current) + offset < len(names)

    def move_scenario(self, offset: int) -> bool:
        """Move the selected scenario ``offset`` places in the list (-1 up, +1 down), as one undo step."""
        if not self.can_move_scenario(offset):
            return False
        scenarios = list(self.project.scenarios)
        index = next(i for i, s in enumerate(scenarios) if s.name == self.current)
        scenarios.insert(index + offset, scenarios.pop(index))
        project = self.project.model_copy(update={"scenarios": tuple(scenarios)})
        direction = "up" if offset < 0 else "down"
        self._push(Snapshot(project, self.current), f"Move scenario {self.current} {direction}")
        return True

    # --- models -------------------------------------------------------------------------------

    def model_architecture(self) -> ModelArchitecture | None:
        scenario = self.scenario
        if scenario is None:
            return None
        try:
            return self.catalogs.model(scenario.model, self.project)
        except Exception:  # noqa: BLE001 - an unresolvable reference shows as "no model", not a crash
            return None

    def add_model(self, arch: ModelArchitecture, select: bool = True) -> str:
        """Add an imported or edited model to the project and (by default) use it in this scenario."""
        taken = set(self.project.models) | set(self.catalogs.models)
        base = slug(arch.name)
        model_id, n = base, 2
        while model_id in taken:
            model_id, n = f"{base}-{n}", n + 1
        models = {**self.project.models, model_id: arch}
        project = self.project.model_copy(update={"models": models})
        scenario = self.scenario
        if select and scenario is not None:
            scenarios = tuple(
                s.model_copy(update={"model": model_id}) if s.name == self.current else s for s in project.scenarios
            )
            project = project.model_copy(update={"scenarios": scenarios})
        self._push(Snapshot(project, self.current), f"Add model {arch.name}")
        return model_id

    def set_model_architecture(self, arch: ModelArchitecture) -> str:
        """Edit the current scenario's model. A catalog model is copied into the project first."""
        scenario = self.scenario
        if scenario is None:
            return ""
        model_id = scenario.model
        project = self.project
        if model_id not in project.models:
            taken = set(project.models) | set(self.catalogs.models)
            base = f"{slug(model_id)}-custom"
            new_id, n = base, 2
            while new_id in taken:
                new_id, n = f"{base}-{n}", n + 1
            model_id = new_id
            scenarios = tuple(s.model_copy(update={"model": model_id}) if s.name == self.current else s
                              for s in project.scenarios)
            project = project.model_copy(update={"scenarios": scenarios})
        project = project.model_copy(update={"models": {**project.models, model_id: arch}})
        self._push(Snapshot(project, self.current), f"Edit model {arch.name}", f"arch:{self.current}:{model_id}")
        return model_id

    # --- compare setup ------------------------------------------------------------------------

    def set_comparison(self, comparison: Comparison, label: str = "Compare setup",
                       merge_key: str | None = "compare-setup") -> None:
        """Keep the Compare tab's setup (candidates, scenarios, targets, prices) as the project's first
        saved comparison, so it is saved, reopened and reported on. Rapid edits with the same
        ``merge_key`` merge into one undo step (None: always a step of its own)."""
        kept = self.project.comparisons
        if kept and kept[0] == comparison:
            return
        project = self.project.model_copy(update={"comparisons": (comparison, *kept[1:])})
        self._push(Snapshot(project, self.current), label, merge_key=merge_key)

    # --- accelerators -------------------------------------------------------------------------

    def upsert_accelerator(self, accelerator: Accelerator, select: bool = True) -> None:
        """Add or replace a custom accelerator (kept in the project) and use it in this scenario."""
        accelerator = accelerator.model_copy(update={"custom": True})
        project = self.project.model_copy(
            update={"accelerators": {**self.project.accelerators, accelerator.id: accelerator}}
        )
        if select and self.scenario is not None:
            scenarios = tuple(s.model_copy(update={"gpu": accelerator.id}) if s.name == self.current else s
                              for s in project.scenarios)
            project = project.model_copy(update={"scenarios": scenarios})
        self._push(Snapshot(project, self.current), f"Custom accelerator {accelerator.name}")

    def remove_accelerator(self, accelerator_id: str, replacement: str = "h100-sxm") -> str | None:
        """Remove a custom accelerator; scenarios that used it move to ``replacement``."""
        if accelerator_id not in self.project.accelerators:
            return f"'{accelerator_id}' is not a custom accelerator of this project"
        remaining = {k: v for k, v in self.project.accelerators.items() if k != accelerator_id}
        if accelerator_id not in self.catalogs.accelerators and accelerator_id != replacement:
            if replacement not in self.catalogs.accelerators and replacement not in remaining:
                replacement = next(iter(self.catalogs.accelerators), "")
            if not replacement:
                return "no other accelerator to move its scenarios to"
            scenarios = tuple(s.model_copy(update={"gpu": replacement}) if s.gpu == accelerator_id else s
                              for s in self.project.scenarios)
        else:
            scenarios = self.project.scenarios
        project = self.project.model_copy(update={"accelerators": remaining, "scenarios": scenarios})
        self._push(Snapshot(project, self.current), f"Remove accelerator {accelerator_id}")
        return None
