"""What the training exporters share: the batch arithmetic and the notes every trainer needs."""

from __future__ import annotations

import math

from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import FinetuneMethod, Scenario
from workbench_export.plan import Notes


def global_batch(s: Scenario) -> int:
    """Sequences per optimizer step over all replicas (the scenario's own, or batch x DP)."""
    return s.global_batch_size or s.batch_size * s.parallel.dp


def train_steps(s: Scenario) -> int | None:
    """Optimizer steps that cover ``train_tokens`` (None when the scenario names no token count)."""
    if s.train_tokens is None:
        return None
    return max(1, math.ceil(s.train_tokens / (global_batch(s) * s.seq_len)))


def nodes(resolved: ResolvedScenario) -> int:
    per_node = resolved.cluster.node.gpus_per_node
    return max(1, math.ceil(resolved.scenario.num_gpus / per_node))


def method_notes(s: Scenario, notes: Notes, engine: str) -> None:
    """Fine-tuning methods live in the training script (PEFT), not in a launcher's config."""
    if s.method is not FinetuneMethod.FULL and s.workload.value == "finetune":
        notes.add(f"method={s.method.value} (rank {s.lora_rank}, {s.lora_targets}): {engine} takes LoRA adapters "
                  "from the training script (e.g. PEFT LoraConfig), not from this file")
    if s.images_per_request:
        notes.add(f"images_per_request={s.images_per_request}: the vision inputs come from the data pipeline")
    if s.parallel.world_size < s.num_gpus:
        notes.add(f"num_gpus={s.num_gpus} but TP x PP x DP = {s.parallel.world_size}: the remaining GPUs are idle")
