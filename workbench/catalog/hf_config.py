"""Import a Hugging Face ``config.json`` as a :class:`~workbench.core.model.ModelArchitecture`.

The family readers live in :mod:`workbench.catalog.architectures`, one module per family group,
each registered with the transformers class whose parameter count it reproduces and the config
class defaults of its type (real configs often leave out ``tie_word_embeddings``,
``num_key_value_heads`` or, for Gemma 3, nearly everything). This module reads the file, finds the
reader (unwrapping multimodal ``text_config`` wrappers), counts the towers it can, and checks the
result against the folder's safetensors headers when the weights are there.

Two places where the count follows the checkpoint rather than ``from_config``:

* T5/mT5: transformers 5 forces ``tie_word_embeddings = True`` on their configs, yet T5 v1.1 and
  Flan-T5 checkpoints store ``lm_head`` separately and ``from_pretrained`` leaves it untied; the
  config's own ``tie_word_embeddings: false`` is kept.
* Wrappers: transformers ties by the wrapper's flag (its class default when absent); an explicit
  flag in ``text_config`` is preferred to that class default.

An unknown ``model_type`` is a guess: it is read with the generic keys (``num_hidden_layers``,
``hidden_size``, ``num_attention_heads``, ``intermediate_size``, ``vocab_size``) as a Llama-style
block and marked approximate (every estimate then warns), and it is refused outright when its
config carries keys that reading would get wrong (experts, state-space or linear-attention layers,
vision/audio towers) unless the caller asks for the approximation. A size key absent from a known type's config takes the config class default, as in
transformers, with a note. Every failure raises :class:`~workbench.core.errors.ModelImportError`
with one line naming the file and the key.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.catalog.architectures import READERS
from workbench.catalog.architectures.config import TYPE_DEFAULTS, Cfg, checkpoint_dtype
from workbench.catalog.architectures.generic import read_generic, unreadable_keys
from workbench.catalog.architectures.multimodal import (
    FLAT_WRAPPERS,
    WRAPPER_REFERENCE,
    WRAPPER_TIE_DEFAULTS,
    WRAPPERS,
    tower_parameters,
)
from workbench.catalog.architectures.vision import read_vision_tower
from workbench.catalog.safe_read import MAX_CONFIG_BYTES, check_counts, inside_folder, load_json_object
from workbench.catalog.safetensors_header import INDEX_NAME, find_safetensors, read_safetensors_folder
from workbench.core.dtypes import WeightFormat
from workbench.core.errors import ModelImportError, describe_validation_error
from workbench.core.limits import MAX_NAME_CHARS
from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters

__all__ = [
    "TYPE_DEFAULTS", "WRAPPER_TIE_DEFAULTS", "HFImport", "ModelImportWarning", "UnknownArchitectureError",
    "architecture_from_hf_config", "import_hf_config", "import_hf_path", "known_model_types",
    "load_hf_config", "read_config_json",
]


class ModelImportWarning(UserWarning):
    """Something the importer could not represent exactly (the note says what)."""


class UnknownArchitectureError(ModelImportError):
    """An unknown ``model_type`` whose config says a Llama-style reading would be wrong."""


@dataclass(frozen=True)
class HFImport:
    """An imported architecture with what the user should know about it."""

    architecture: ModelArchitecture
    model_type: str
    #: Name of the transformers class whose ``parameters()`` the count reproduces (None: unknown type).
    reference_class: str | None
    #: True when that class is built from ``text_config`` alone (other towers not counted).
    reference_from_text_config: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def approximate(self) -> bool:
        return self.architecture.approximate is not None


def known_model_types() -> set[str]:
    """Every ``model_type`` the importer reads block for block (wrappers included)."""
    return set(READERS) | set(WRAPPERS)


def _refuse_or_mark(config: Mapping[str, Any], model_type: str, where: str, approximate: bool) -> str:
    """The approximation note for an unknown type, or :class:`UnknownArchitectureError`."""
    keys = unreadable_keys(config)
    shown = model_type or "(none)"
    if keys and not approximate:
        listed = ", ".join(f"'{k}'" for k in keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        raise UnknownArchitectureError(
            f"{where}: model_type '{shown}' is not one the importer reads, and {listed} change size and "
            "cost in ways a Llama-style reading gets wrong: refused (pass --approximate to read it as a "
            "Llama-style block anyway, every estimate then marked approximate)"
        )
    ignored = f"; ignored: {', '.join(keys)}" if keys else ""
    return f"unknown model_type '{shown}' read as a Llama-style block{ignored}"


def import_hf_config(
    config: Mapping[str, Any],
    *,
    name: str | None = None,
    source: str | None = None,
    approximate: bool = False,
) -> HFImport:
    """Read a parsed ``config.json`` into an architecture, with notes and the reference class.

    An unknown ``model_type`` is read as a Llama-style block and marked approximate; one whose
    config holds keys that reading cannot honour raises :class:`UnknownArchitectureError` unless
    ``approximate`` is set.
    """
    where = source or "config"
    if not isinstance(config, Mapping):
        raise ModelImportError(f"{where}: the config must be a JSON object, got {type(config).__name__}")
    check_counts(config, where)  # absurd sizes are refused before any per-layer list is built
    model_type = config.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ModelImportError(f"{where}: 'model_type' must be a string, got {model_type!r}")
    model_type = model_type or ""
    notes: list[str] = []
    top = Cfg(config, where, model_type)
    text_type = model_type
    text = top
    extra = 0
    from_text = False
    if model_type in WRAPPERS or (model_type not in READERS and top.has("text_config")):
        nested = top.mapping("text_config")
        if nested is None and model_type in FLAT_WRAPPERS:
            # the language model's keys sit at the top level, as transformers reads them
            text_type = WRAPPERS[model_type]
            text = Cfg(config, where, text_type)
        elif nested is None:
            raise top.fail("text_config", "is missing: this multimodal config needs its language model")
        else:
            text_type = nested.get("model_type") or WRAPPERS.get(model_type, "")
            if not isinstance(text_type, str):
                raise top.fail("text_config.model_type", f"must be a string, got {text_type!r}")
            text = top.nested("text_config", text_type)
    reader = READERS.get(text_type)
    approximation = None
    if reader is None or (model_type not in READERS and model_type not in WRAPPERS):
        approximation = _refuse_or_mark(config, model_type, where, approximate)
    if reader is None:
        fields, family = read_generic(text, notes), text_type or model_type or "custom"
    else:
        fields, family = reader.read(text, notes), reader.family
    if text is not top:
        # transformers ties by the wrapper's own flag (its class default when absent). An explicit
        # flag in text_config describes the checkpoint better than that class default, and
        # from_pretrained unties weights a checkpoint stores twice, so it wins over the default.
        if top.has("tie_word_embeddings"):
            fields["tie_word_embeddings"] = top.flag("tie_word_embeddings")
        elif not text.has("tie_word_embeddings") and model_type in WRAPPER_TIE_DEFAULTS:
            fields["tie_word_embeddings"] = WRAPPER_TIE_DEFAULTS[model_type]
        tower = read_vision_tower(model_type, top, fields["hidden_size"], notes) if approximation is None else None
        if tower is not None:
            fields["vision_tower"] = tower
        else:
            extra = tower_parameters(model_type, top, fields["hidden_size"], notes)
            from_text = extra == 0
    for cfg in (top, text) if text is not top else (top,):
        if cfg.defaulted:
            listed = ", ".join(f"{k}={v}" for k, v in cfg.defaulted.items())
            notes.append(
                f"absent from the config, taken from transformers' {cfg.model_type} defaults: {listed}"
            )
    fields.setdefault("rope_theta", None)
    extra += fields.pop("extra_parameters", 0)  # a family's own uncounted parts (OPT's offset rows)
    try:
        arch = ModelArchitecture(
            name=name or _default_name(config, model_type),
            family=family.split("_")[0],
            hf_model_type=model_type or None,
            torch_dtype=checkpoint_dtype(top) or checkpoint_dtype(text),
            approximate=approximation,
            extra_parameters=extra,
            source=source,
            **fields,
        )
    except ValidationError as exc:
        raise ModelImportError(describe_validation_error(exc, where)) from None
    if approximation is not None or reader is None:
        reference = None
    elif from_text or text is top:
        reference = READERS[text_type].reference_class
    else:
        reference = WRAPPER_REFERENCE.get(model_type)
    return HFImport(arch, model_type, reference, from_text, tuple(notes))


def _default_name(config: Mapping[str, Any], model_type: str) -> str:
    path = config.get("_name_or_path")
    if isinstance(path, str) and path.strip():
        name = path.rstrip("/").split("/")[-1]
        if 0 < len(name) <= MAX_NAME_CHARS:
            return name  # a longer one (a hostile or broken file) is no name to show
    return (model_type or "imported model")[:MAX_NAME_CHARS]


def architecture_from_hf_config(
    config: Mapping[str, Any], *, name: str | None = None, source: str | None = None, approximate: bool = False
) -> ModelArchitecture:
    """The architecture of a parsed ``config.json``; each note is emitted as a :class:`ModelImportWarning`."""
    result = import_hf_config(config, name=name, source=source, approximate=approximate)
    for note in result.notes:
        warnings.warn(f"{source or result.architecture.name}: {note}", ModelImportWarning, stacklevel=2)
    return result.architecture


def read_config_json(path: Path) -> dict[str, Any]:
    """Parse a ``config.json`` under the limits of :mod:`~workbench.catalog.safe_read`."""
    return load_json_object(path, MAX_CONFIG_BYTES, "config.json")


def import_hf_path(path: str | Path, *, approximate: bool = False) -> HFImport:
    """Import a ``config.json`` file or a model folder.

    For a folder that also holds ``*.safetensors`` weights, the headers are read (never the
    tensors): towers the config does not describe are filled into ``extra_parameters`` from the
    difference, and any other disagreement becomes a note.
    """
    p = Path(path)
    if p.is_dir():
        config_path = inside_folder(p, "config.json", str(p))  # not a link out of the folder
        shards = find_safetensors(p)
        if not config_path.exists():  # present but not a file: read_config_json says what it is
            if shards:
                raise ModelImportError(
                    f"{p}: no config.json (the {len(shards)} safetensors file(s) alone do not describe "
                    "the architecture)"
                )
            raise ModelImportError(f"{p}: no config.json and no *.safetensors files in this folder")
        name = p.name
    elif p.exists():  # a FIFO or a device is refused by read_config_json, not called missing
        config_path, shards, name = p, [], None
    else:
        raise ModelImportError(f"{p}: no such file or folder")
    data = read_config_json(config_path)
    result = import_hf_config(data, name=name, source=str(config_path), approximate=approximate)
    if not shards:
        if p.is_dir() and (p / INDEX_NAME).is_file():
            note = f"{INDEX_NAME} found without its shards: the count is not checked against the weights"
            return HFImport(result.architecture, result.model_type, result.reference_class,
                            result.reference_from_text_config, (*result.notes, note))
        return result
    total = read_safetensors_folder(p).total
    notes = list(result.notes)
    if total is None:
        notes.append(f"the shards {INDEX_NAME} lists are absent: the weights are not counted")
        return HFImport(result.architecture, result.model_type, result.reference_class,
                        result.reference_from_text_config, tuple(notes))
    counted = count_parameters(result.architecture).stored
    arch = result.architecture
    packed = _mxfp4_expert_weights(arch)
    if packed:
        # MXFP4 experts (gpt-oss) are stored as uint8 blocks of two 4-bit values plus one uint8
        # scale per 32 values: the headers count those bytes, not the weights.
        counted += packed // 2 + packed // 32 - packed
        notes.append(
            f"the safetensors headers count the {packed:,} MXFP4 expert weights as "
            f"{packed // 2 + packed // 32:,} stored bytes (blocks and scales)"
        )
    difference = total - counted
    if difference > 0 and result.reference_from_text_config:
        arch = arch.model_copy(update={"extra_parameters": arch.extra_parameters + difference})
        notes.append(f"{difference:,} parameters of the other towers taken from the safetensors headers")
    elif difference:
        notes.append(
            f"the safetensors files hold {total:,} parameters, the architecture counts "
            f"{counted:,} ({difference:+,})"
        )
    return HFImport(arch, result.model_type, result.reference_class, result.reference_from_text_config,
                    tuple(notes))


def _mxfp4_expert_weights(arch: ModelArchitecture) -> int:
    """Weights of the routed experts' matrices a checkpoint stores in MXFP4 (0 if it does not)."""
    moe = arch.moe
    if moe is None or moe.expert_weight_format is not WeightFormat.FP4:
        return 0
    matrices = 3 if arch.gated_mlp else 2
    layers = sum(1 for i in range(arch.num_layers) if arch.is_moe_layer(i))
    return layers * moe.num_experts * matrices * arch.hidden_size * moe.expert_intermediate_size


def load_hf_config(path: str | Path, *, approximate: bool = False) -> ModelArchitecture:
    """The architecture of a ``config.json`` file or a model folder (notes emitted as warnings)."""
    result = import_hf_path(path, approximate=approximate)
    for note in result.notes:
        warnings.warn(f"{path}: {note}", ModelImportWarning, stacklevel=2)
    return result.architecture
