"""The accelerator and node-shape catalogs: the shipped YAML plus the user's own files.

Shipped data lives in ``resources/catalog/{accelerators,nodes}.yaml``; users add or replace
entries with ``*.yaml`` / ``*.yml`` / ``*.json`` files in ``<user data dir>/accelerators`` and
``<user data dir>/nodes`` (or files passed as ``extra_paths``). An entry whose id already exists
replaces it; every user entry is marked ``custom``.

Each accelerator entry carries ``sources`` (key -> source, ``default_source`` required in the
shipped file) and ``field_sources`` (figure -> source key). The loader expands them into
:attr:`Accelerator.provenance`, one :class:`Source` per non-null figure. A source is an inline
mapping or the name of an entry in the file's top-level ``sources``; a file's ``defaults`` may
give the ``retrieved`` date once. Any malformed file raises :class:`CatalogError` with one line
naming the file, the entry and the field.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from workbench import paths
from workbench.core.dtypes import DType
from workbench.core.errors import CatalogError, describe_validation_error
from workbench.core.hardware import Accelerator, NodeShape, Source
from workbench.core.yaml_cache import load_yaml

_USER_SUFFIXES = (".yaml", ".yml", ".json")

ACCELERATORS_FILE = "accelerators.yaml"
NODES_FILE = "nodes.yaml"
GENERIC_NODE_ID = "generic-pcie"

#: Scalar figures of an :class:`Accelerator` that need a source when they are not null.
FIGURE_FIELDS = (
    "memory_gib",
    "memory_type",
    "memory_bandwidth_gbps",
    "tdp_watts",
    "interconnect",
    "interconnect_gbps",
    "pcie_gen",
    "form_factor",
    "launch_year",
    "list_price_usd",
    "cloud_usd_per_hour",
    "cloud_spot_usd_per_hour",
)
#: Per-dtype figures; provenance keys are ``"<group>.<dtype>"``.
RATE_GROUPS = ("dense_tflops", "sparse_tflops")
_DTYPE_IDS = tuple(d.value for d in DType)

_Entry = TypeVar("_Entry", Accelerator, NodeShape)


def figure_paths(accelerator: Accelerator) -> list[str]:
    """Provenance keys of every non-null figure of ``accelerator``."""
    keys = [name for name in FIGURE_FIELDS if getattr(accelerator, name) is not None]
    for group in RATE_GROUPS:
        keys.extend(f"{group}.{dtype.value}" for dtype in getattr(accelerator, group))
    return keys


# --- public API ----------------------------------------------------------------------------------


def load_accelerators(extra_paths: Sequence[Path | str] = ()) -> dict[str, Accelerator]:
    """Shipped accelerators, then the user's folder, then ``extra_paths`` (later ones win)."""
    catalog = dict(_shipped_accelerators(paths.catalog_dir() / ACCELERATORS_FILE))
    for path in _user_files(paths.user_data_dir() / "accelerators", extra_paths):
        for acc in _parse_file(path, "accelerators", _build_accelerator, user=True):
            catalog[acc.id] = acc
    return catalog


def load_node_shapes(extra_paths: Sequence[Path | str] = ()) -> dict[str, NodeShape]:
    """Shipped node shapes, then the user's folder, then ``extra_paths`` (later ones win)."""
    shapes = dict(_shipped_node_shapes(paths.catalog_dir() / NODES_FILE))
    for path in _user_files(paths.user_data_dir() / "nodes", extra_paths):
        for shape in _parse_file(path, "node_shapes", _build_node_shape, user=True):
            shapes.pop(shape.id, None)  # re-insert at the end: user shapes are searched first
            shapes[shape.id] = shape
    return shapes


def get_accelerator(gpu_id: str, catalog: Mapping[str, Accelerator] | None = None) -> Accelerator:
    """The accelerator with ``gpu_id``; an unknown id raises with the closest known one."""
    catalog = load_accelerators() if catalog is None else catalog
    key = gpu_id.strip().lower()
    if key in catalog:
        return catalog[key]
    raise CatalogError(_unknown_id_message("GPU id", gpu_id, catalog))


def get_node_shape(node_id: str, shapes: Mapping[str, NodeShape] | None = None) -> NodeShape:
    """The node shape with ``node_id``; an unknown id raises with the closest known one."""
    shapes = load_node_shapes() if shapes is None else shapes
    key = node_id.strip().lower()
    if key in shapes:
        return shapes[key]
    raise CatalogError(_unknown_id_message("node shape", node_id, shapes))


def default_node_for(
    accelerator: Accelerator | str, shapes: Mapping[str, NodeShape] | None = None
) -> NodeShape:
    """The node shape built for ``accelerator`` (a user's shape first), else the generic PCIe one."""
    shapes = load_node_shapes() if shapes is None else shapes
    acc_id = accelerator.id if isinstance(accelerator, Accelerator) else accelerator
    for shape in reversed(list(shapes.values())):
        if acc_id in shape.accelerators:
            return shape
    if GENERIC_NODE_ID not in shapes:
        raise CatalogError(f"no node shape lists '{acc_id}' and the fallback '{GENERIC_NODE_ID}' is missing")
    return shapes[GENERIC_NODE_ID]


# --- shipped data, parsed once ---------------------------------------------------------------------


@functools.lru_cache(maxsize=4)
def _shipped_accelerators(path: Path) -> dict[str, Accelerator]:
    return {a.id: a for a in _parse_file(path, "accelerators", _build_accelerator, user=False)}


@functools.lru_cache(maxsize=4)
def _shipped_node_shapes(path: Path) -> dict[str, NodeShape]:
    return {n.id: n for n in _parse_file(path, "node_shapes", _build_node_shape, user=False)}


# --- files -----------------------------------------------------------------------------------------


def _user_files(folder: Path, extra_paths: Iterable[Path | str]) -> list[Path]:
    found = _catalog_files_in(folder) if folder.is_dir() else []
    for extra in map(Path, extra_paths):
        if extra.is_dir():
            found.extend(_catalog_files_in(extra))
        elif extra.is_file():
            found.append(extra)
        else:
            raise CatalogError(f"{extra}: no such catalog file")
    return found


def _catalog_files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in _USER_SUFFIXES and p.is_file())


def _read_document(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(_one_line(f"{path}: cannot read: {exc}")) from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise CatalogError(
                f"{path}: JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CatalogError(_one_line(f"{path}: YAML syntax error{where}: {problem}")) from None


def _parse_file(
    path: Path,
    list_key: str,
    build: Callable[..., _Entry],
    *,
    user: bool,
) -> list[_Entry]:
    """Entries of one catalog file, each validated; duplicate ids within the file are an error."""
    document = _read_document(path)
    if document is None:
        return []
    defaults: Mapping[str, Any] = {}
    shared_raw: Any = {}
    if isinstance(document, dict) and "id" not in document:
        defaults = document.get("defaults") or {}
        shared_raw = document.get("sources") or {}
        entries = document.get(list_key)
        unknown = set(document) - {"defaults", "sources", list_key}
        if unknown:
            raise CatalogError(
                f"{path}: unknown top-level key(s) {', '.join(sorted(map(str, unknown)))}; "
                f"expected '{list_key}', 'sources', 'defaults'"
            )
    elif isinstance(document, dict):
        entries = [document]  # a file holding a single entry
    else:
        entries = document
    if not isinstance(entries, list):
        raise CatalogError(f"{path}: expected a list under '{list_key}' (or a list of entries)")
    if not isinstance(defaults, dict) or not isinstance(shared_raw, dict):
        raise CatalogError(f"{path}: 'defaults' and 'sources' must be mappings")
    shared = {
        str(key): _parse_source(raw, defaults, f"{path}: sources.{key}") for key, raw in shared_raw.items()
    }
    fallback = _user_file_source(path) if user else None
    built: list[_Entry] = []
    seen: set[str] = set()
    for index, raw in enumerate(entries, start=1):
        kind = "accelerator" if list_key == "accelerators" else "node shape"
        if not isinstance(raw, dict):
            raise CatalogError(f"{path}: {kind} #{index}: expected a mapping of fields")
        label = f"{kind} '{raw['id']}'" if isinstance(raw.get("id"), str) else f"{kind} #{index}"
        context = f"{path}: {label}"
        entry = build(dict(raw), context, shared, defaults, fallback, user)
        if entry.id in seen:
            raise CatalogError(f"{context}: id: duplicate id '{entry.id}' in this file")
        seen.add(entry.id)
        built.append(entry)
    return built


def _user_file_source(path: Path) -> Source:
    retrieved = dt.date.fromtimestamp(path.stat().st_mtime)
    return Source(
        title=f"User catalog file {path.name}",
        url=path.resolve().as_uri(),
        retrieved=retrieved,
        note="Entered by the user; not checked against a vendor document.",
    )


def _parse_source(raw: Any, defaults: Mapping[str, Any], context: str) -> Source:
    if not isinstance(raw, dict):
        raise CatalogError(f"{context}: expected a mapping with title, url, retrieved, note")
    data = {"retrieved": defaults.get("retrieved"), **raw} if "retrieved" in defaults else dict(raw)
    try:
        return Source.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(_one_line(describe_validation_error(exc, context))) from None


def _resolve_source(
    raw: Any, shared: Mapping[str, Source], defaults: Mapping[str, Any], context: str
) -> Source:
    if isinstance(raw, str):
        if raw not in shared:
            known = ", ".join(sorted(shared)) or "none"
            raise CatalogError(f"{context}: unknown source '{raw}'; file sources: {known}")
        return shared[raw]
    return _parse_source(raw, defaults, context)


# --- entries ---------------------------------------------------------------------------------------


def _build_accelerator(
    data: dict[str, Any],
    context: str,
    shared: Mapping[str, Source],
    defaults: Mapping[str, Any],
    fallback: Source | None,
    user: bool,
) -> Accelerator:
    sources_raw = data.pop("sources", None) or {}
    field_sources = data.pop("field_sources", None) or {}
    if not isinstance(sources_raw, dict) or not isinstance(field_sources, dict):
        raise CatalogError(f"{context}: 'sources' and 'field_sources' must be mappings")
    sources = {
        str(key): _resolve_source(raw, shared, defaults, f"{context}: sources.{key}")
        for key, raw in sources_raw.items()
    }
    if "default_source" not in sources:
        if fallback is None:
            raise CatalogError(f"{context}: sources.default_source: missing (every figure needs a source)")
        sources["default_source"] = fallback
    for group in RATE_GROUPS:
        rates = data.get(group)
        for dtype in rates if isinstance(rates, dict) else ():
            if dtype not in _DTYPE_IDS:
                known = ", ".join(_DTYPE_IDS)
                raise CatalogError(f"{context}: {group}.{dtype}: unknown dtype; known: {known}")
    if user:
        data["custom"] = True
    try:
        acc = Accelerator.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(_one_line(describe_validation_error(exc, context))) from None
    figures = figure_paths(acc)
    for field, key in field_sources.items():
        if not isinstance(key, str) or key not in sources:
            raise CatalogError(
                f"{context}: field_sources.{field}: unknown source key '{key}'; "
                f"this entry's sources: {', '.join(sorted(sources))}"
            )
        group, _, dtype = str(field).partition(".")
        if not (field in FIGURE_FIELDS or (group in RATE_GROUPS and (not dtype or dtype in _DTYPE_IDS))):
            raise CatalogError(f"{context}: field_sources.{field}: not a figure field")
        if field not in figures and not (field in RATE_GROUPS and getattr(acc, field)):
            raise CatalogError(f"{context}: field_sources.{field}: this entry has no such figure")
    provenance: dict[str, Source] = {}
    for figure in figures:
        group = figure.partition(".")[0]
        key = field_sources.get(figure) or field_sources.get(group) or "default_source"
        provenance[figure] = sources[key]
    provenance.update(acc.provenance)  # an entry may spell out provenance itself
    return acc.model_copy(update={"provenance": provenance})


def _build_node_shape(
    data: dict[str, Any],
    context: str,
    shared: Mapping[str, Source],
    defaults: Mapping[str, Any],
    fallback: Source | None,
    user: bool,
) -> NodeShape:
    raw_source = data.pop("source", None)
    if raw_source is not None:
        data["source"] = _resolve_source(raw_source, shared, defaults, f"{context}: source")
    elif fallback is not None:
        data["source"] = fallback
    else:
        raise CatalogError(f"{context}: source: missing (every node shape needs a source)")
    try:
        return NodeShape.model_validate(data)
    except ValidationError as exc:
        raise CatalogError(_one_line(describe_validation_error(exc, context))) from None


# --- messages --------------------------------------------------------------------------------------


def _unknown_id_message(what: str, given: str, known: Mapping[str, object]) -> str:
    ids = sorted(known)
    key = given.strip().lower()
    # "h100" is a prefix of three ids: name them all rather than the nearest spelling ("mi100").
    matches = [i for i in ids if key and i.startswith(key)]
    matches = matches or difflib.get_close_matches(key, ids, n=1, cutoff=0.5)
    if len(matches) == 1:
        hint = f" (did you mean '{matches[0]}'?)"
    elif matches:
        hint = f" (did you mean one of {', '.join(repr(m) for m in matches[:5])}?)"
    else:
        hint = ""
    return f"unknown {what} '{given}'; known ids: {', '.join(ids)}{hint}"


def _one_line(text: str) -> str:
    return " ".join(text.split())
