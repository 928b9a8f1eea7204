"""Family readers of Hugging Face ``config.json`` files, one module per family group.

Each module registers its readers (:func:`workbench.catalog.architectures.registry.reads`) when
imported; importing this package imports them all. :mod:`workbench.catalog.hf_config` is the
entry point that uses them.
"""

from workbench.catalog.architectures import (  # noqa: F401 - imported to register their readers
    bamba,
    deepseek,
    encoders,
    ernie,
    falcon_h1,
    gemma,
    glm,
    gpt,
    gpt_oss,
    granite_hybrid,
    jamba,
    kimi,
    lfm2,
    llama,
    mamba,
    minimax,
    nemotron,
    olmo,
    phi,
    qwen,
    qwen3_5,
    qwen_next,
    zamba,
)
from workbench.catalog.architectures.registry import READERS, Reader

__all__ = ["READERS", "Reader"]
