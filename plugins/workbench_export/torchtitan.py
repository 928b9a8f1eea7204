"""A torchtitan job TOML (v0.2.2) from a training scenario."""

from __future__ import annotations

import json
from typing import Any

from workbench.core.dtypes import DType
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Offload, Optimizer, PipelineSchedule, Recompute
from workbench_export.formats import ENGINES
from workbench_export.plan import Notes
from workbench_export.training import global_batch, method_notes, train_steps

ENGINE, VERSION, SOURCE = ENGINES["torchtitan"]

_SCHEDULES = {PipelineSchedule.ONE_F_ONE_B: "1F1B", PipelineSchedule.INTERLEAVED: "Interleaved1F1B",
              PipelineSchedule.GPIPE: "GPipe"}


def config(resolved: ResolvedScenario, notes: Notes) -> dict[str, dict[str, Any]]:
    s = resolved.scenario
    p = s.parallel
    # ZeRO 0 replicates (DDP); 1-3 shard over the DP ranks with FSDP2, which always shards
    # gradients too: ZeRO-1 has no exact equivalent.
    sharded = p.zero_stage > 0
    parallelism: dict[str, Any] = {
        "data_parallel_replicate_degree": 1 if sharded else p.dp,
        "data_parallel_shard_degree": p.dp if sharded else 1,
        "fsdp_reshard_after_forward": "always" if p.zero_stage == 3 else "never" if sharded else "default",
        "tensor_parallel_degree": p.tp,
        "pipeline_parallel_degree": p.pp,
        "pipeline_parallel_schedule": _SCHEDULES[p.pipeline_schedule],
        "pipeline_parallel_microbatch_size": s.batch_size,
        "expert_parallel_degree": p.ep,
    }
    if p.zero_stage == 1:
        notes.add("zero_stage=1: FSDP2 shards gradients as well (ZeRO-2 here, reshard never)")
    if p.pp > 1 and p.pipeline_schedule is PipelineSchedule.INTERLEAVED and p.virtual_stages > 1:
        notes.add(f"virtual_stages={p.virtual_stages}: torchtitan splits stages by "
                  "pipeline_parallel_layers_per_stage (layers / (PP x virtual stages))")
    if p.sequence_parallel:
        notes.add("sequence_parallel: torchtitan's tensor parallel plan always shards norms along the sequence")
    training: dict[str, Any] = {
        "local_batch_size": s.batch_size,
        "global_batch_size": global_batch(s),
        "seq_len": s.seq_len,
        "mixed_precision_param": "float32" if s.dtype is DType.FP32 else "bfloat16",
        "enable_cpu_offload": p.offload_params is not Offload.NONE or p.offload_optimizer is not Offload.NONE,
    }
    if s.dtype is DType.FP16:
        notes.add("dtype=fp16: torchtitan's mixed precision is bfloat16 or float32; bfloat16 written")
    steps = train_steps(s)
    if steps is not None:
        training["steps"] = steps
    if Offload.NVME in (p.offload_params, p.offload_optimizer):
        notes.add("nvme offload: torchtitan offloads to CPU memory only (enable_cpu_offload)")
    doc: dict[str, dict[str, Any]] = {
        "job": {"description": f"{s.name}: {s.workload.value} on {s.num_gpus} x {resolved.cluster.accelerator.name}"},
        "training": training,
        "parallelism": parallelism,
        "activation_checkpoint": {"mode": {Recompute.NONE: "none", Recompute.SELECTIVE: "selective",
                                           Recompute.FULL: "full"}[s.recompute]},
    }
    if s.optimizer is Optimizer.ADAMW:
        doc["optimizer"] = {"name": "AdamW"}
    else:
        notes.add(f"optimizer={s.optimizer.value}: torchtitan builds optimizers by torch.optim name; "
                  "this export writes AdamW only")
    if s.dtype is DType.FP8:
        doc["model"] = {"converters": ["quantize.linear.float8"]}
    notes.add(f"model {resolved.model.name}: set [model] name and flavor to torchtitan's own model registry entry")
    method_notes(s, notes, ENGINE)
    return doc


def toml(doc: dict[str, dict[str, Any]]) -> str:
    """TOML for tables of scalars and string lists (all this export writes)."""
    out = []
    for table, values in doc.items():
        out.append(f"[{table}]")
        out.extend(f"{key} = {_value(value)}" for key, value in values.items())
        out.append("")
    return "\n".join(out)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    # JSON's string escapes (\\, \", \n, \uXXXX) are TOML basic-string escapes too.
    return json.dumps(str(value), ensure_ascii=False)
