"""First-party exporters: launch configurations from a sizing plan.

Serving: ``vllm serve``, SGLang ``launch_server`` and ``trtllm-serve`` (with its extra LLM-API
YAML) command lines, each with the ``vllm bench serve`` command that checks the plan's TTFT, TPOT
and throughput, and a Kubernetes manifest. Training: a DeepSpeed JSON config, Megatron-LM
arguments, a torchtitan TOML and an Accelerate FSDP config. Each exporter names the engine version
whose argument names it follows; tests/data/engine_args holds those documented lists.

Depends only on pluggy, PyYAML, :mod:`workbench.core` and :mod:`workbench.engine`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from workbench_export.formats import FORMATS, LazyExporter

__version__ = "1.0.0"

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_exporters(register: Callable[[Any], None]) -> None:
    for ident in FORMATS:
        register(LazyExporter(ident))


def __getattr__(name: str) -> Any:
    """``ALL``, the exporters themselves, imports their code (the hook above does not)."""
    if name == "ALL":
        from workbench_export.exporters import ALL

        return ALL
    raise AttributeError(name)


__all__ = ["ALL", "__version__", "workbench_register_exporters"]
