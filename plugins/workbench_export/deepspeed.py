"""A DeepSpeed JSON config (``ds_config.json``) from a training scenario.

JSON has no comments: what the config cannot hold goes to ``ds_config.notes.txt`` beside it.
"""

from __future__ import annotations

import json
from typing import Any

from workbench.core.dtypes import DType
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Offload, Optimizer, Recompute
from workbench_export.formats import ENGINES
from workbench_export.plan import Notes, header
from workbench_export.training import global_batch, method_notes

ENGINE, VERSION, SOURCE = ENGINES["deepspeed"]

_OPTIMIZERS = {Optimizer.ADAMW: "AdamW", Optimizer.SGD_MOMENTUM: "SGD", Optimizer.ADAFACTOR: "Adafactor"}


def config(resolved: ResolvedScenario, notes: Notes) -> dict[str, Any]:
    s = resolved.scenario
    p = s.parallel
    doc: dict[str, Any] = {
        # DeepSpeed's train_batch_size counts data-parallel ranks only (TP and PP ranks share a sample).
        "train_batch_size": global_batch(s),
        "train_micro_batch_size_per_gpu": s.batch_size,
        "gradient_accumulation_steps": s.grad_accumulation_steps,
    }
    name = _OPTIMIZERS.get(s.optimizer)
    if name is None:
        notes.add(f"optimizer={s.optimizer.value}: build it in the training script (bitsandbytes) and pass it "
                  "to deepspeed.initialize")
    else:
        doc["optimizer"] = {"type": name, "params": {"momentum": 0.9} if name == "SGD" else {}}
        if name != "AdamW":
            notes.add(f"optimizer {name}: DeepSpeed imports it from torch.optim")
    doc["bf16"] = {"enabled": s.dtype in (DType.BF16, DType.FP8)}
    doc["fp16"] = {"enabled": s.dtype is DType.FP16}
    if s.dtype is DType.FP8:
        notes.add("dtype=fp8: the config has no fp8 key; use Transformer Engine layers in the model, bf16 here")
    if s.dtype is DType.FP32:
        notes.add("dtype=fp32: neither bf16 nor fp16 is enabled")
    if not s.master_weights and s.dtype is DType.BF16:
        doc["bf16"]["bf16_master_weights_and_grads"] = True
        doc["bf16"]["bf16_optimizer_states"] = True
    zero: dict[str, Any] = {"stage": p.zero_stage}
    if p.offload_optimizer is not Offload.NONE:
        zero["offload_optimizer"] = {"device": p.offload_optimizer.value}
        if p.zero_stage == 0:
            notes.add("offload_optimizer needs ZeRO stage 1 or more; DeepSpeed ignores it at stage 0")
    if p.offload_params is not Offload.NONE:
        if p.zero_stage == 3:
            zero["offload_param"] = {"device": p.offload_params.value}
        else:
            notes.add(f"offload_params={p.offload_params.value}: DeepSpeed offloads parameters at ZeRO stage 3 only")
    doc["zero_optimization"] = zero
    if p.tp > 1:
        doc["tensor_parallel"] = {"autotp_size": p.tp}
    if p.pp > 1:
        notes.add(f"pp={p.pp} ({p.pipeline_schedule.value}): pipeline stages come from the model code "
                  "(deepspeed.pipe.PipelineModule), not from this file")
    if p.ep > 1:
        notes.add(f"ep={p.ep}: expert parallelism is set where the MoE layers are built (deepspeed.moe ep_size)")
    if p.sequence_parallel:
        notes.add("sequence_parallel: no key in this file (Megatron-style SP lives in the model code)")
    if s.recompute is not Recompute.NONE:
        notes.add(f"recompute={s.recompute.value}: turn on activation checkpointing in the model "
                  "(gradient_checkpointing_enable or deepspeed.checkpointing.checkpoint)")
    notes.add(f"seq_len={s.seq_len}: set by the data pipeline")
    if s.train_tokens is not None:
        notes.add(f"train_tokens={s.train_tokens:g}: the training loop's step count")
    method_notes(s, notes, ENGINE)
    return doc


def render(resolved: ResolvedScenario, expected: list[str]) -> dict[str, str]:
    notes = Notes()
    doc = config(resolved, notes)
    text = header("DeepSpeed config notes", resolved, ENGINE, VERSION, SOURCE, prefix="")
    if expected:
        text += "The plan expects: " + ", ".join(expected) + "\n"
    text += notes.comment_block(prefix="")
    return {"ds_config.json": json.dumps(doc, indent=2) + "\n", "ds_config.notes.txt": text}
