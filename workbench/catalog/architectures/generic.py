"""Configs of a ``model_type`` no reader knows: read as a Llama-style block, or refused.

Reading an unknown type with the generic keys is a guess. It is only made when nothing in the
config says the guess is wrong in a way that changes size or cost; a config that carries expert,
state-space / linear-attention, hybrid-layer or vision/audio-tower keys is refused unless the user
asks for the approximation, and then every estimate made from it carries the
``approximate-architecture`` warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.catalog.architectures.config import Cfg
from workbench.catalog.architectures.llama import read_llama
from workbench.core.errors import ModelImportError

#: Keys an unknown ``model_type`` must have (no config class supplies defaults).
GENERIC_REQUIRED = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
)
#: Keys whose presence means experts (a Llama-style reading would count one dense FFN).
EXPERT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts", "n_shared_experts")
#: Key prefixes of experts, state-space and linear-attention layers.
UNREADABLE_PREFIXES = ("moe_", "ssm_", "mamba_", "linear_")
#: Per-layer type lists: any entry that is not attention means non-attention layers.
LAYER_LIST_KEYS = ("layer_types", "layers_block_type", "hybrid_override_pattern")
#: Towers besides the language model.
TOWER_KEYS = ("vision_config", "audio_config")
_ATTENTION_ENTRIES = frozenset({"attention", "full_attention", "sliding_attention", "global", "local", "*"})


def _set(value: Any) -> bool:
    """A key counts when it carries something (null, 0, false and empty say "not used")."""
    return value is not None and value is not False and value != 0 and value != [] and value != {}


def _non_attention_layers(key: str, value: Any) -> bool:
    if isinstance(value, str):  # Nemotron-H's pattern: '*' attention, 'M' Mamba-2, '-' MLP, 'E' MoE
        return any(ch != "*" for ch in value)
    if isinstance(value, list):
        return any(str(entry).lower() not in _ATTENTION_ENTRIES for entry in value)
    return _set(value)


def unreadable_keys(config: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Keys of ``config`` (and of its ``text_config``) that a Llama-style reading cannot honour."""
    found: list[str] = []
    for key, value in config.items():
        if not isinstance(key, str):
            continue
        name = prefix + key
        if key in TOWER_KEYS and _set(value):
            found.append(name)
        elif key in LAYER_LIST_KEYS:
            if _non_attention_layers(key, value):
                found.append(f"{name} (non-attention layers)")
        elif (key in EXPERT_KEYS or key.startswith(UNREADABLE_PREFIXES)) and _set(value):
            found.append(name)
    nested = config.get("text_config")
    if not prefix and isinstance(nested, Mapping):
        found += unreadable_keys(nested, "text_config.")
    return found


def read_generic(c: Cfg, notes: list[str]) -> dict[str, Any]:
    missing = [c.prefix + k for k in GENERIC_REQUIRED if not c.has(k)]
    if missing:
        listed = "', '".join(missing)
        raise ModelImportError(
            f"{c.where}: missing required key{'s' if len(missing) > 1 else ''} '{listed}' "
            f"(model_type {c.data.get('model_type')!r} is not one the importer knows)"
        )
    notes.append(
        f"unknown model_type {c.data.get('model_type')!r}: read with the generic keys as a Llama-style "
        "block (RMSNorm, gated FFN, untied unless tie_word_embeddings says otherwise); check the count"
    )
    return read_llama(c, notes)
