"""The storage catalog (``resources/catalog/storage.yaml``): local drives, parallel file systems and
object stores with their published throughput.

Read here, in the engine layer, as the serving-engine defaults are: the cluster plugin (which may
import only ``workbench.core`` and ``workbench.engine``) costs data reads and checkpoints with it,
and the CLI checks a scenario's storage id against it before any estimate runs.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.core.errors import CatalogError
from workbench.core.hardware import Source
from workbench.core.yaml_cache import load_yaml
from workbench.paths import catalog_dir

STORAGE_FILE = "storage.yaml"


class StorageKind(str, Enum):
    LOCAL = "local"
    SHARED = "shared"
    OBJECT = "object"


class StorageSystem(BaseModel):
    """One storage system: throughput per unit (a drive, an appliance, a key prefix)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$", description="Short id used on the command line.")
    name: str = Field(min_length=1, description="Display name.")
    kind: StorageKind = Field(description="local (per node), shared (parallel file system) or object store.")
    read_gbps: float = Field(gt=0, description="Sequential read per unit, GB/s.")
    write_gbps: float = Field(gt=0, description="Sequential write per unit, GB/s.")
    random_read_iops: float | None = Field(None, gt=0, description="Random reads per second per unit (None: not published).")
    count: int = Field(gt=0, description="Typical units: drives per node (local), appliances or prefixes (shared, object).")
    source: Source = Field(description="Where the figures come from.")


@lru_cache(maxsize=4)
def _load(path: Path) -> tuple[dict[str, StorageSystem], str]:
    try:
        data: Any = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except yaml.YAMLError:
        raise CatalogError(f"{path}: not valid YAML") from None
    if not isinstance(data, dict) or not isinstance(data.get("storage"), list):
        raise CatalogError(f"{path}: expected a mapping with a 'storage' list")
    retrieved = (data.get("defaults") or {}).get("retrieved")
    systems: dict[str, StorageSystem] = {}
    for entry in data["storage"]:
        if not isinstance(entry, dict):
            raise CatalogError(f"{path}: every storage entry must be a mapping")
        source = entry.get("source")
        if isinstance(source, dict) and "retrieved" not in source and isinstance(retrieved, dt.date):
            entry = {**entry, "source": {**source, "retrieved": retrieved}}
        try:
            system = StorageSystem.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CatalogError(f"{path}: storage {entry.get('id', '?')}: {where}: {first['msg']}") from None
        if system.id in systems:
            raise CatalogError(f"{path}: storage id '{system.id}' appears twice")
        systems[system.id] = system
    default = data.get("default")
    if default not in systems:
        raise CatalogError(f"{path}: 'default' must name a storage entry")
    return systems, default


@lru_cache(maxsize=1)
def _shipped() -> Path:
    # Resolved once: every estimate looks its storage up, and resolving the path costs more than the rest.
    return catalog_dir() / STORAGE_FILE


def storage_systems(path: Path | None = None) -> dict[str, StorageSystem]:
    """Every storage system of the catalog, by id (CatalogError, one line, for a broken file)."""
    return _load(path or _shipped())[0]


def default_storage_id(path: Path | None = None) -> str:
    """The entry a scenario that names no storage uses."""
    return _load(path or _shipped())[1]


def storage_system(ident: str | None) -> StorageSystem:
    """The entry ``ident`` names (None: the default); KeyError with the known ids otherwise."""
    systems, default = _load(_shipped())
    try:
        return systems[default if ident is None else ident]
    except KeyError:
        raise KeyError(f"unknown storage '{ident}' (known: {', '.join(systems)})") from None
