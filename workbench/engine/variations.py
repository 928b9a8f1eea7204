"""Change one scenario field by name without re-validating the whole scenario (hot path).

Sweeps and solvers make thousands of variants of one validated scenario. ``model_copy(update=)``
skips validation, so the values are checked here, once per distinct value, against the field's
own validator (:meth:`Scenario.model_validate` on a probe) before any variant is built.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from workbench.core.errors import InputError, describe_validation_error
from workbench.core.scenario import Scenario

#: Short names accepted by ``--vary`` (CLI flag spelling) -> scenario field path.
ALIASES: dict[str, str] = {
    "batch": "batch_size",
    "seq-len": "seq_len",
    "seq_len": "seq_len",
    "gen-len": "gen_len",
    "gen_len": "gen_len",
    "gpus": "num_gpus",
    "gpu": "gpu",
    "model": "model",
    "tp": "parallel.tp",
    "pp": "parallel.pp",
    "dp": "parallel.dp",
    "ep": "parallel.ep",
    "zero": "parallel.zero_stage",
    "dtype": "dtype",
    "weights": "weights",
    "kv-dtype": "kv_dtype",
    "workload": "workload",
    "method": "method",
    "lora-rank": "lora_rank",
    "optimizer": "optimizer",
    "recompute": "recompute",
    "attention": "attention",
    "global-batch": "global_batch_size",
    "gpu-mem-util": "serving.gpu_memory_utilization",
    "batching": "serving.batching",
    "arrival-rate": "serving.arrival_rate",
    "mfu": "mfu",
}


def field_path(name: str) -> str:
    path = ALIASES.get(name, name)
    head, _, tail = path.partition(".")
    if head not in Scenario.model_fields:
        known = ", ".join(sorted(ALIASES))
        raise InputError(f"--vary: unknown field '{name}' (known: {known})")
    if tail and tail not in Scenario.model_fields[head].annotation.model_fields:  # type: ignore[union-attr]
        raise InputError(f"--vary: unknown field '{name}'")
    return path


def with_fields(base: Scenario, changes: dict[str, Any]) -> Scenario:
    """A copy of ``base`` with ``changes`` (field path -> already validated value) applied."""
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for path, value in changes.items():
        head, _, tail = path.partition(".")
        if tail:
            nested.setdefault(head, {})[tail] = value
        else:
            top[head] = value
    for head, sub in nested.items():
        top[head] = getattr(base, head).model_copy(update=sub)
    return base.model_copy(update=top)


def validated_value(base: Scenario, path: str, raw: Any) -> Any:
    """Validate ``raw`` for the field at ``path`` by validating one full variant of ``base``."""
    data = base.model_dump()
    head, _, tail = path.partition(".")
    if tail:
        data[head][tail] = raw
    else:
        data[head] = raw
    if head == "num_gpus" or path.startswith("parallel."):
        _keep_layout_consistent(data)
    try:
        probe = Scenario.model_validate(data)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, f"{path}={raw}")) from None
    return getattr(getattr(probe, head), tail) if tail else getattr(probe, head)


def _keep_layout_consistent(data: dict[str, Any]) -> None:
    """When a sweep changes GPUs or a degree, DP absorbs the rest so TP x PP x DP = GPUs."""
    par = data["parallel"]
    try:
        gpus, per_replica = int(data["num_gpus"]), int(par["tp"]) * int(par["pp"])
    except (TypeError, ValueError):
        return  # not a number: validation below names the field
    if per_replica > 0 and gpus % per_replica == 0:
        par["dp"] = max(gpus // per_replica, 1)
    elif per_replica > gpus:
        data["num_gpus"] = per_replica  # a TP/PP value larger than the base GPU count grows the job
