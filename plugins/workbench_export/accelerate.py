"""An Accelerate FSDP config YAML (``accelerate launch --config_file``) from a training scenario."""

from __future__ import annotations

from typing import Any

from workbench.core.dtypes import DType
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Offload, Recompute
from workbench_export.formats import ENGINES
from workbench_export.plan import Notes
from workbench_export.training import method_notes, nodes

ENGINE, VERSION, SOURCE = ENGINES["accelerate"]

_PRECISION = {DType.BF16: "bf16", DType.FP16: "fp16", DType.FP8: "fp8", DType.FP32: "no"}


def config(resolved: ResolvedScenario, notes: Notes) -> dict[str, Any]:
    s = resolved.scenario
    p = s.parallel
    doc: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "FSDP",
        "mixed_precision": _PRECISION[s.dtype],
        "num_machines": nodes(resolved),
        "num_processes": p.world_size,
        "machine_rank": 0,
        "main_training_function": "main",
        "fsdp_config": {
            "fsdp_version": 2,
            # FSDP2 reshards weights after forward (ZeRO-3) or keeps them gathered (ZeRO-2).
            "fsdp_reshard_after_forward": p.zero_stage == 3,
            "fsdp_offload_params": p.offload_params is not Offload.NONE,
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_cpu_ram_efficient_loading": True,
            "fsdp_activation_checkpointing": s.recompute is not Recompute.NONE,
        },
    }
    if s.dtype is DType.FP8:
        doc["fp8_config"] = {"backend": "TE", "fp8_format": "HYBRID"}
    if p.zero_stage < 2:
        notes.add(f"zero_stage={p.zero_stage}: FSDP always shards gradients and optimizer states; the nearest is "
                  "ZeRO-2 (reshard after forward off)")
    if p.offload_params is not Offload.NONE and p.offload_optimizer is Offload.NONE:
        notes.add("offload_params: FSDP offloads parameters, gradients and optimizer states together")
    elif p.offload_optimizer is not Offload.NONE and p.offload_params is Offload.NONE:
        notes.add(f"offload_optimizer={p.offload_optimizer.value}: FSDP cannot offload the optimizer alone; "
                  "fsdp_offload_params stays false")
    if Offload.NVME in (p.offload_params, p.offload_optimizer):
        notes.add("nvme offload: FSDP offloads to CPU memory only")
    if s.recompute is Recompute.SELECTIVE:
        notes.add("recompute=selective: FSDP activation checkpointing recomputes whole layers (full)")
    for name, degree in (("tp", p.tp), ("pp", p.pp), ("ep", p.ep)):
        if degree > 1:
            notes.add(f"{name}={degree}: this FSDP config has no {name.upper()} degree; FSDP runs data parallel over "
                      f"{p.world_size} processes")
    notes.add(f"micro-batch {s.batch_size}, {s.grad_accumulation_steps} accumulation step(s), sequence {s.seq_len}: "
              "set in the training script (Accelerator(gradient_accumulation_steps=...), the DataLoader)")
    notes.add(f"optimizer={s.optimizer.value}: built by the training script")
    method_notes(s, notes, ENGINE)
    return doc
