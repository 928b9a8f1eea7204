"""The registry of family readers: which function reads which ``model_type``.

A family module registers each reader with :func:`reads`, giving the transformers class whose
``parameters()`` the reader's count reproduces and the config class defaults of that type. The
importer (:mod:`workbench.catalog.hf_config`) looks readers up here; a ``model_type`` with no
reader is an unknown type, refused when its config holds keys that change size or cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.catalog.architectures.config import TYPE_DEFAULTS, Cfg

ReadFn = Callable[[Cfg, list[str]], dict[str, Any]]


@dataclass(frozen=True)
class Reader:
    model_type: str
    read: ReadFn
    #: Short family name shown in the catalog (``llama``, ``qwen``, ...).
    family: str
    #: The transformers class whose parameter count the reader reproduces (None: none is built).
    reference_class: str | None


READERS: dict[str, Reader] = {}


def reads(
    model_type: str,
    *,
    family: str,
    reference: str | None,
    defaults: dict[str, Any] | None = None,
) -> Callable[[ReadFn], ReadFn]:
    """Register the decorated function as the reader of ``model_type`` (stack it for aliases)."""

    def register(fn: ReadFn) -> ReadFn:
        if model_type in READERS:
            raise ValueError(f"two readers for model_type {model_type!r}")
        READERS[model_type] = Reader(model_type, fn, family, reference)
        if defaults is not None:
            TYPE_DEFAULTS[model_type] = defaults
        return fn

    return register
