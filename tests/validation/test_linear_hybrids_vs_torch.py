"""Jamba, LFM2, Kimi-Linear and Qwen3.5-MoE (its text model) through the engine, against transformers 5.

The same three checks as test_recurrent_engine_vs_torch.py (whose harness this reuses), on small
synthetic configs (the published configs are checked for their counts in
test_hybrid_families.py):

* the cache after a prefill: ``kv_cache.bytes`` + ``recurrent_state.bytes`` equal the bytes of
  every tensor the transformers cache holds (KV of attention layers, the MLA latent of
  Kimi-Linear's, conv windows and recurrent states of the others);
* FLOPs: forward and one training step within 1% of ``FlopCounterMode`` over the CPU torch path
  (Mamba-1's sequential selective scan, LFM2's convolution, the chunked delta rules of KDA and
  Gated DeltaNet);
* activations: what one forward + loss keeps for backward (saved-tensors probe) within 2%, eager
  and sdpa, with and without gradient checkpointing.
"""

from __future__ import annotations

from typing import Any

import pytest
from workbench_memory.kv_cache import KvCacheEstimator

from workbench.catalog.hf_config import import_hf_config
from workbench.core import Scenario
from workbench.core.model import ModelArchitecture

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from test_hybrid_families import TINY
from test_recurrent_engine_vs_torch import _conv_backward, cache_bytes, ours

pytestmark = pytest.mark.validation

# The synthetic configs of the reader tests (test_hybrid_families.py), run here through the
# engine; Jamba on the CPU torch path (no mamba kernels).
_FAMILIES = ("jamba", "jamba-biases-rank", "lfm2", "lfm2-bias-idxs", "kimi_linear", "kimi_linear-bias-shared",
             "qwen3_5_moe_text", "qwen3_5_moe_text-bias-interval")  # fmt: skip
CONFIGS: dict[str, dict[str, Any]] = {
    name.replace("qwen3_5_moe_text", "qwen3_5_moe"): (
        {**TINY[name], "use_mamba_kernels": False} if TINY[name]["model_type"] == "jamba" else TINY[name]
    )
    for name in _FAMILIES
}


def architecture(name: str, configs: dict[str, dict[str, Any]] = CONFIGS) -> ModelArchitecture:
    return import_hf_config(configs[name], name=name).architecture


def hf_model(config: dict[str, Any], **settings: Any) -> Any:
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    for key, value in settings.items():
        setattr(conf, key, value)
    return transformers.AutoModelForCausalLM.from_config(conf)


# --- the cache after a prefill ------------------------------------------------------------------

CACHE_CASES = [("jamba", 2, 13), ("jamba-biases-rank", 1, 5), ("lfm2", 2, 13), ("lfm2-bias-idxs", 3, 2),
               ("kimi_linear", 2, 13), ("kimi_linear-bias-shared", 1, 70), ("qwen3_5_moe", 2, 13),
               ("qwen3_5_moe-bias-interval", 1, 70)]  # fmt: skip


@pytest.mark.parametrize(("name", "batch", "tokens"), CACHE_CASES)
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill_matches_transformers(name: str, batch: int, tokens: int, dtype: str) -> None:
    """A real tiny model prefills with ``use_cache=True``; the bytes of its cache's tensors must
    equal the engine's ``kv_cache.bytes`` and ``recurrent_state.bytes`` (contiguous KV)."""
    torch.manual_seed(0)
    model = hf_model(CONFIGS[name]).to(torch.float32 if dtype == "fp32" else torch.bfloat16).eval()
    with torch.no_grad():
        out = model(torch.randint(1, 90, (batch, tokens)), use_cache=True)
    kv, state = cache_bytes(out.past_key_values)
    est = ours(architecture(name), [KvCacheEstimator()], batch_size=batch, seq_len=tokens, gen_len=0,
               dtype=dtype, serving={"paged_kv": False})  # fmt: skip
    assert state > 0 and kv > 0
    assert est.values["kv_cache.bytes"].value == kv
    assert est.values["recurrent_state.bytes"].value == state


# --- FLOPs --------------------------------------------------------------------------------------


def torch_flops(name: str, batch: int, tokens: int, attention: str = "eager") -> tuple[int, int]:
    """FlopCounterMode over the CPU torch path (eager experts; SDPA on its math backend, as
    test_flops_vs_torch.py counts it): (forward, forward + backward of a summed loss)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = hf_model(CONFIGS[name], _attn_implementation=attention, _experts_implementation="eager").train()
    ids = torch.randint(1, 90, (batch, tokens))
    mapping = {torch.ops.aten.convolution_backward: _conv_backward}
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False, custom_mapping=mapping) as forward:
        out = model(ids, use_cache=False)
    with FlopCounterMode(display=False, custom_mapping=mapping) as backward:
        out.logits.float().sum().backward()
    return forward.get_total_flops(), forward.get_total_flops() + backward.get_total_flops()


FLOP_CASES = [("jamba", 2, 37), ("jamba-biases-rank", 1, 16), ("lfm2", 2, 37), ("lfm2-bias-idxs", 1, 16),
              ("kimi_linear", 2, 20), ("kimi_linear-bias-shared", 1, 70), ("qwen3_5_moe", 2, 20),
              ("qwen3_5_moe-bias-interval", 1, 70)]  # fmt: skip
#: The first case of each family again with SDPA.
ATTENTION_CASES = [(*case, "eager") for case in FLOP_CASES] + [(*case, "sdpa") for case in FLOP_CASES[::2]]


def engine_flops(name: str, batch: int, tokens: int, attention: str = "eager") -> tuple[float, float]:
    from workbench_compute import ComputeEstimator

    est = ours(architecture(name), [ComputeEstimator()], batch_size=batch, seq_len=tokens, workload="pretrain",
               attention=attention)  # fmt: skip
    return est.values["flops.forward"].value, est.values["flops.training_step"].value


@pytest.mark.parametrize(("name", "batch", "tokens", "attention"), ATTENTION_CASES)
def test_forward_and_training_flops_match_flop_counter(
    name: str, batch: int, tokens: int, attention: str
) -> None:
    """Forward (every position through the head) and one training step within 1% of what PyTorch
    executes; sequences that are not whole chunks included."""
    forward, step = engine_flops(name, batch, tokens, attention)
    ref_forward, ref_step = torch_flops(name, batch, tokens, attention)
    assert forward == pytest.approx(ref_forward, rel=0.01)
    assert step == pytest.approx(ref_step, rel=0.01)


# --- activations saved for backward -------------------------------------------------------------

_BIG = {"vocab_size": 1000, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0, "use_cache": False,
        "max_position_embeddings": 1024}  # fmt: skip
# The largest kind of block last: backward rebuilds it under checkpointing. Kimi-Linear's MLA keeps
# its query/key head (nope + rope) as wide as its value head: with unequal widths PyTorch's CPU
# SDPA cannot run its fused kernel and falls back to the math path, which upcasts a bf16 attention
# to fp32 and keeps the full score matrix, a CPU fallback a GPU does not take (its memory-efficient
# kernel takes unequal widths and keeps only the log-sum-exp).
ACT_CONFIGS: dict[str, dict[str, Any]] = {
    "jamba": _BIG | {
        "model_type": "jamba", "hidden_size": 128, "num_hidden_layers": 4, "attn_layer_period": 2,
        "attn_layer_offset": 0, "expert_layer_period": 2, "expert_layer_offset": 1, "intermediate_size": 256,
        "num_experts": 4, "num_experts_per_tok": 2, "mamba_d_state": 16, "num_attention_heads": 8,
        "num_key_value_heads": 2, "use_mamba_kernels": False,
    },
    "lfm2": _BIG | {
        "model_type": "lfm2", "hidden_size": 256, "num_hidden_layers": 3, "intermediate_size": 512,
        "layer_types": ["conv", "conv", "full_attention"], "num_attention_heads": 8,
        "num_key_value_heads": 2, "block_auto_adjust_ff_dim": False,
    },
    "kimi_linear": _BIG | {
        "model_type": "kimi_linear", "hidden_size": 256, "num_hidden_layers": 3, "intermediate_size": 512,
        "moe_intermediate_size": 64, "num_experts": 4, "num_experts_per_token": 2, "kv_lora_rank": 64,
        "q_lora_rank": None, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16, "v_head_dim": 32,
        "first_k_dense_replace": 1, "num_attention_heads": 8, "num_key_value_heads": 8,
        "linear_attn_config": {"kda_layers": [1, 3], "full_attn_layers": [2], "num_heads": 4,
                               "head_dim": 32, "short_conv_kernel_size": 4},
    },
    "qwen3_5_moe": _BIG | {
        "model_type": "qwen3_5_moe_text", "hidden_size": 256, "num_hidden_layers": 4, "head_dim": 32,
        "num_attention_heads": 8, "num_key_value_heads": 2, "linear_key_head_dim": 32,
        "linear_value_head_dim": 48, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
        "moe_intermediate_size": 64, "shared_expert_intermediate_size": 96, "num_experts": 4,
        "num_experts_per_tok": 2,
        "layer_types": ["linear_attention", "full_attention", "linear_attention", "linear_attention"],
    },
}  # fmt: skip
ACT_CASES = [
    (family, attention, checkpointing)
    for family in ACT_CONFIGS
    for attention in ("eager", "sdpa")
    for checkpointing in (False, True)
]


def saved_bytes(family: str, tokens: int, attention: str, checkpointing: bool) -> tuple[int, int]:
    """(bytes held for backward after forward + loss, bytes first saved inside the last block), bf16."""
    import warnings

    from saved_tensors_probe import saved_activation_bytes

    torch.manual_seed(0)
    model = hf_model(ACT_CONFIGS[family], _attn_implementation=attention).to(torch.bfloat16).train()
    ids = torch.randint(0, 1000, (2, tokens), generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        saved = saved_activation_bytes(model, ids, block=model.base_model.layers[-1])
    return saved.bytes, saved.block_bytes


def engine_activations(family: str, tokens: int, attention: str, checkpointing: bool) -> Any:
    from workbench_memory.activations import activation_memory

    arch = architecture(family, ACT_CONFIGS)
    scenario = Scenario(model=family, gpu="cpu", dtype="bf16", batch_size=2, seq_len=tokens, attention=attention,
                        recompute="full" if checkpointing else "none", workload="pretrain")  # fmt: skip
    return activation_memory(arch, scenario, micro_batch=2, seq_len=tokens, tp=1, sequence_parallel=False,
                             layers=arch.num_layers, first_stage=True, last_stage=True)  # fmt: skip


@pytest.mark.parametrize(("family", "attention", "checkpointing"), ACT_CASES)
def test_activations_match_saved_tensors(family: str, attention: str, checkpointing: bool) -> None:
    """What one forward + loss keeps for backward within 2% (200 tokens: not whole chunks of the
    delta rules): everything without checkpointing; with it, what is held from forward to
    backward (``kept``), and ``total`` against that plus the last block measured without it."""
    tokens = 200
    est = engine_activations(family, tokens, attention, checkpointing)
    held, _ = saved_bytes(family, tokens, attention, checkpointing)
    if not checkpointing:
        assert est.total == pytest.approx(held, rel=0.02)
        return
    _, block = saved_bytes(family, tokens, attention, False)
    assert est.kept == pytest.approx(held, rel=0.02)
    assert est.total == pytest.approx(held + block, rel=0.02)
