"""Megatron-LM ``pretrain_gpt.py`` arguments (core_v0.14.0) from a training scenario, launched with torchrun."""

from __future__ import annotations

from workbench.core.dtypes import DType
from workbench.core.model import NormKind, PositionEmbedding
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import AttentionKernel, Offload, Optimizer, PipelineSchedule, Recompute
from workbench_export.formats import ENGINES
from workbench_export.plan import Notes
from workbench_export.training import global_batch, method_notes, nodes

ENGINE, VERSION, SOURCE = ENGINES["megatron"]
SCRIPT = "pretrain_gpt.py"


def launcher(resolved: ResolvedScenario, notes: Notes) -> list[str]:
    n = nodes(resolved)
    per_node = min(resolved.scenario.num_gpus, resolved.cluster.node.gpus_per_node)
    argv = ["torchrun", "--nproc-per-node", str(per_node), "--nnodes", str(n)]
    if n > 1:
        argv += ["--node-rank", "${NODE_RANK}", "--master-addr", "${MASTER_ADDR}", "--master-port", "6000"]
        notes.add(f"{n} nodes: run this on each node with NODE_RANK (0 to {n - 1}) and MASTER_ADDR (node 0) set")
    return argv


def arguments(resolved: ResolvedScenario, notes: Notes) -> list[str]:
    s, m = resolved.scenario, resolved.model
    p = s.parallel
    argv = ["--tensor-model-parallel-size", str(p.tp),
            "--pipeline-model-parallel-size", str(p.pp)]
    if p.ep > 1:
        argv += ["--expert-model-parallel-size", str(p.ep)]
    if p.sequence_parallel:
        argv.append("--sequence-parallel")
    if p.pp > 1 and p.pipeline_schedule is PipelineSchedule.INTERLEAVED:
        argv += ["--num-virtual-stages-per-pipeline-rank", str(p.virtual_stages)]
    elif p.pipeline_schedule is PipelineSchedule.GPIPE:
        notes.add("pipeline_schedule=gpipe: Megatron-LM runs 1F1B (or interleaved) schedules only")
    argv += ["--micro-batch-size", str(s.batch_size),
             "--global-batch-size", str(global_batch(s)),
             "--seq-length", str(s.seq_len),
             "--max-position-embeddings", str(max(m.max_position_embeddings, s.seq_len)),
             "--num-layers", str(m.num_layers),
             "--hidden-size", str(m.hidden_size),
             "--num-attention-heads", str(m.num_attention_heads),
             "--kv-channels", str(m.head_dim),
             "--ffn-hidden-size", str(m.intermediate_size)]
    if m.num_kv_heads != m.num_attention_heads:
        argv += ["--group-query-attention", "--num-query-groups", str(m.num_kv_heads)]
    if m.gated_mlp and m.activation == "silu":
        argv.append("--swiglu")
    elif m.gated_mlp:
        notes.add(f"gated FFN with {m.activation}: Megatron-LM's flag is --swiglu (SiLU) only")
    if not m.tie_word_embeddings:
        argv.append("--untie-embeddings-and-output-weights")
    argv += ["--normalization", "RMSNorm" if m.norm_kind is NormKind.RMSNORM else "LayerNorm"]
    if m.position_embedding is PositionEmbedding.ROPE:
        argv += ["--position-embedding-type", "rope"]
        if m.rope_theta is not None:
            argv += ["--rotary-base", f"{m.rope_theta:g}"]
    if not (m.attention_bias or m.mlp_bias):
        argv.append("--disable-bias-linear")
    elif m.attention_bias and not m.mlp_bias:
        argv += ["--disable-bias-linear", "--add-qkv-bias"]
    if m.moe is not None:
        argv += ["--num-experts", str(m.moe.num_experts),
                 "--moe-router-topk", str(m.moe.experts_per_token),
                 "--moe-ffn-hidden-size", str(m.moe.expert_intermediate_size)]
        if m.moe.num_shared_experts:
            shared = m.moe.shared_expert_intermediate_size or m.moe.expert_intermediate_size * m.moe.num_shared_experts
            argv += ["--moe-shared-expert-intermediate-size", str(shared)]
    for feature, present in (("MLA", m.mla), ("sliding-window attention", m.sliding_window),
                             ("recurrent layers", m.recurrent), ("vision tower", m.vision_tower)):
        if present:
            notes.add(f"{feature}: needs a model-specific layer spec, not plain GPT arguments")
    notes.add(f"vocab_size={m.vocab_size}: follows the tokenizer (--tokenizer-type / --tokenizer-model)")
    if s.dtype is DType.BF16 or s.dtype is DType.FP8:
        argv.append("--bf16")
    elif s.dtype is DType.FP16:
        argv.append("--fp16")
    if s.dtype is DType.FP8:
        argv += ["--fp8-format", "hybrid"]
    if s.recompute is Recompute.FULL:
        argv += ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
    elif s.recompute is Recompute.SELECTIVE:
        argv += ["--recompute-granularity", "selective"]
    if p.zero_stage >= 1:
        argv.append("--use-distributed-optimizer")
    if p.zero_stage >= 2:
        notes.add(f"zero_stage={p.zero_stage}: the distributed optimizer shards optimizer states (ZeRO-1); "
                  "gradients and weights are sharded by --use-torch-fsdp2 instead, which this export does not pick")
    if p.offload_optimizer is Offload.CPU:
        argv.append("--optimizer-cpu-offload")
    elif p.offload_optimizer is Offload.NVME:
        notes.add("offload_optimizer=nvme: Megatron-LM offloads optimizer states to CPU memory only")
    if p.offload_params is not Offload.NONE:
        notes.add(f"offload_params={p.offload_params.value}: Megatron-LM keeps weights on the GPU")
    if s.optimizer is Optimizer.ADAMW:
        argv += ["--optimizer", "adam"]  # Megatron's adam applies decoupled weight decay (AdamW)
    elif s.optimizer is Optimizer.SGD_MOMENTUM:
        argv += ["--optimizer", "sgd"]
    else:
        notes.add(f"optimizer={s.optimizer.value}: Megatron-LM offers adam and sgd")
    if not s.master_weights:
        notes.add("master_weights=false: Megatron-LM keeps fp32 main weights with --bf16/--fp16")
    if s.attention is AttentionKernel.EAGER:
        argv += ["--attention-backend", "unfused"]
    else:
        argv += ["--attention-backend", "flash"]
    if s.train_tokens is not None:
        argv += ["--train-samples", str(max(1, round(s.train_tokens / s.seq_len)))]
    method_notes(s, notes, ENGINE)
    return argv
