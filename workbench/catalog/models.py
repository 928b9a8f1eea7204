"""The shipped model catalog: ``resources/catalog/models/*.json``.

Each file describes one published model and carries its Hugging Face ``config.json`` verbatim,
so the architecture comes from the same importer a user's own config goes through::

    {"id": "llama-3.1-8b", "name": "Llama 3.1 8B", "family": "llama",
     "hf_repo": "meta-llama/Llama-3.1-8B",
     "published_parameters": 8030000000, "published_parameters_note": "...",
     "active_parameters": null,
     "source": {"title": "...", "url": "https://...", "retrieved": "2025-01-31"},
     "config": {...}}
"""

from __future__ import annotations

import difflib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.catalog.hf_config import import_hf_config, import_hf_path
from workbench.core.errors import CatalogError, ModelImportError, describe_validation_error
from workbench.core.model import ModelArchitecture
from workbench.paths import catalog_dir

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class CatalogSource(BaseModel):
    """Where the catalog's figures come from."""

    model_config = _FROZEN

    title: str = Field(min_length=1, description="Title of the cited page or paper.")
    url: str = Field(min_length=1, description="Address of the cited page.")
    retrieved: str = Field(min_length=1, description="Date the page was read (YYYY-MM-DD).")


class CatalogModel(BaseModel):
    """One model of the shipped catalog."""

    model_config = _FROZEN

    id: str = Field(min_length=1, description="Catalog id, used on the command line and in project files.")
    name: str = Field(min_length=1, description="Display name.")
    family: str = Field(min_length=1, description="Model family, e.g. 'llama'.")
    hf_repo: str | None = Field(None, description="Hugging Face repository the config was taken from.")
    published_parameters: int | None = Field(
        None, gt=0, description="Parameter count the publisher states (often rounded)."
    )
    published_parameters_note: str | None = Field(
        None, description="What the published figure covers, when it differs from the weights."
    )
    active_parameters: int | None = Field(
        None, gt=0, description="Parameters active per token the publisher states (mixture-of-experts)."
    )
    source: CatalogSource = Field(description="Citation for the published figures and the config.")
    architecture: ModelArchitecture = Field(description="The architecture imported from the config.")
    config: dict[str, Any] = Field(
        default_factory=dict, repr=False, description="The Hugging Face config.json, verbatim."
    )
    notes: tuple[str, ...] = Field((), description="What the importer could not represent exactly.")
    path: Path | None = Field(None, repr=False, description="The catalog file.")


_ENTRY_KEYS = {
    "id", "name", "family", "hf_repo", "published_parameters", "published_parameters_note",
    "active_parameters", "source", "config",
}


def _number(value: Any) -> Any:
    """Published counts may be written 7.24e9; keep them exact integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def load_model_file(path: Path) -> CatalogModel:
    """Read and validate one catalog file; any problem is a :class:`CatalogError` naming file and field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: a catalog entry must be a JSON object")
    unknown = sorted(set(data) - _ENTRY_KEYS)
    if unknown:
        raise CatalogError(f"{path}: unknown key '{unknown[0]}'")
    for key in ("id", "name", "config", "source"):
        if key not in data:
            raise CatalogError(f"{path}: missing required key '{key}'")
    config = data["config"]
    if not isinstance(config, dict):
        raise CatalogError(f"{path}: 'config' must be the model's config.json object")
    try:
        imported = import_hf_config(config, name=data["name"], source=str(path))
    except ModelImportError as exc:
        raise CatalogError(str(exc)) from None
    family = data.get("family") or imported.architecture.family
    arch = imported.architecture.model_copy(
        update={"family": family, "source": data.get("hf_repo") or str(path)}
    )
    try:
        return CatalogModel(
            id=data["id"],
            name=data["name"],
            family=family,
            hf_repo=data.get("hf_repo"),
            published_parameters=_number(data.get("published_parameters")),
            published_parameters_note=data.get("published_parameters_note"),
            active_parameters=_number(data.get("active_parameters")),
            source=data["source"],
            architecture=arch,
            config=config,
            notes=imported.notes,
            path=path,
        )
    except ValidationError as exc:
        raise CatalogError(describe_validation_error(exc, str(path))) from None


@lru_cache(maxsize=8)
def _load(directory: Path) -> dict[str, CatalogModel]:
    models: dict[str, CatalogModel] = {}
    for path in sorted(directory.glob("*.json")):
        model = load_model_file(path)
        if model.id in models:
            raise CatalogError(f"{path}: id '{model.id}' is already used by {models[model.id].path}")
        models[model.id] = model
    return models


def load_model_catalog(directory: str | Path | None = None) -> dict[str, CatalogModel]:
    """All catalog models by id (read once per folder, then cached; see :func:`clear_cache`)."""
    folder = Path(directory) if directory is not None else catalog_dir() / "models"
    return dict(_load(folder.resolve()))


def clear_cache() -> None:
    """Forget loaded catalogs (after the files changed)."""
    _load.cache_clear()
    _load_file.cache_clear()


def _catalog_file(model_id: str, directory: str | Path | None) -> CatalogModel | None:
    """The catalog model ``model_id`` read from its own file (``<id>.json``) when the whole catalog
    has not been read yet: a command that estimates one model does not parse the other fifty.
    None when there is no such file or it holds another id (the whole catalog decides then)."""
    folder = (Path(directory) if directory is not None else catalog_dir() / "models").resolve()
    if _load.cache_info().currsize:  # the catalog is in memory already: it answers
        return None
    if not model_id or "/" in model_id or "\\" in model_id or model_id.startswith("."):
        return None
    path = folder / f"{model_id}.json"
    if not path.is_file():
        return None
    model = _load_file(path)
    return model if model.id == model_id else None


@lru_cache(maxsize=64)
def _load_file(path: Path) -> CatalogModel:
    return load_model_file(path)


def get_model(model_id: str, directory: str | Path | None = None) -> CatalogModel:
    """The catalog model ``model_id``; an unknown id raises :class:`CatalogError` with a suggestion."""
    models = load_model_catalog(directory)
    if model_id in models:
        return models[model_id]
    lowered = {k.lower(): k for k in models}
    if model_id.lower() in lowered:
        return models[lowered[model_id.lower()]]
    close = difflib.get_close_matches(model_id.lower(), list(lowered), n=1, cutoff=0.5)
    hint = f"; did you mean '{lowered[close[0]]}'?" if close else ""
    raise CatalogError(f"unknown model '{model_id}'{hint}")


#: Config files / folders the user asked to read approximately when their model_type is unknown
#: (``--approximate``): a choice made for this process, not stored in any scenario.
_APPROXIMATE_PATHS: set[Path] = set()


def _expand(path: str | Path) -> Path:
    """``~`` and ``~user`` expanded; an unknown user's home is an input mistake, not a crash."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        raise ModelImportError(f"{path}: no such user's home folder") from None


def allow_approximate(path: str | Path) -> None:
    """Let :func:`resolve_model` read ``path`` as an approximation if its ``model_type`` is unknown."""
    _APPROXIMATE_PATHS.add(_expand(path).resolve())


def resolve_model(id_or_path: str | Path, directory: str | Path | None = None) -> ModelArchitecture:
    """A catalog id (or a catalog model's Hugging Face repo), or a ``config.json`` / model folder
    path, as an architecture. Catalog ids win over same-named relative paths."""
    text = str(id_or_path)
    if not isinstance(id_or_path, Path):
        single = _catalog_file(text, directory)
        if single is not None:  # the usual case: one catalog id, read from its own file
            return single.architecture
        models = load_model_catalog(directory)
        if text in models:
            return models[text].architecture
        by_repo = [m for m in models.values() if m.hf_repo and m.hf_repo.lower() == text.lower()]
        if by_repo:
            return by_repo[0].architecture
    path = _expand(id_or_path)
    if path.is_file() and path.suffix.lower() == ".gguf":  # a llama.cpp file: its header describes it
        from workbench.catalog.gguf_header import import_gguf

        return import_gguf(path, approximate=path.resolve() in _APPROXIMATE_PATHS).architecture
    if path.exists():
        return import_hf_path(path, approximate=path.resolve() in _APPROXIMATE_PATHS).architecture
    if isinstance(id_or_path, Path) or "/" in text or "\\" in text or text.endswith(".json"):
        raise ModelImportError(f"{text}: no such file or folder, and no catalog model with that repo")
    return get_model(text, directory).architecture
