"""The compute estimator's named assumptions: defaults, sources, and what each switch means."""

from __future__ import annotations

from workbench.engine.assumptions import Assumption

CAUSAL = "compute.causal_attention_discount"
DECODE_CONTEXT = "compute.decode_context_fraction"
MLA_LATENT = "compute.mla_absorbed_decode"

ASSUMPTIONS = (
    Assumption(
        CAUSAL,
        "Masked attention work the kernel skips",
        0.0,
        "fraction",
        "FLOP convention of this workbench and of torch.utils.flop_counter: transformers' eager and SDPA "
        "attention compute the full s x s score matrix and mask it. FlashAttention-2 (Dao 2023, sec. 3.1.1) "
        "skips fully masked blocks: set 1 to count only the causal triangle (and the window).",
        "0: dense kernel, every (query, key) pair of the sequence is multiplied (causal masking is not "
        "discounted). 1: only the pairs a causal / sliding-window mask keeps.",
        0.0,
        1.0,
    ),
    Assumption(
        DECODE_CONTEXT,
        "Average decode position in the generated tokens",
        0.5,
        "fraction",
        "Mean over a generation of gen_len tokens: the context grows from seq_len to seq_len + gen_len.",
        "A decode step attends to seq_len + fraction x gen_len cached tokens.",
        0.0,
        1.0,
    ),
    Assumption(
        MLA_LATENT,
        "MLA decode in latent space (weight absorption)",
        1.0,
        "switch",
        "DeepSeek-V2 (2024) sec. 2.1.3; vLLM / SGLang MLA decode kernels (FlashMLA) attend in the compressed "
        "latent. transformers 5 re-expands the cached latent through kv_b_proj at every step instead (0).",
        "Both cache the latent (kv_lora_rank + rope dims per token, replicated over TP). 1: attention over "
        "kv_lora_rank + rope dims per head. 0: every cached latent re-expanded through kv_b_proj each step, "
        "then attention over per-head K/V (measured against transformers in the validation suite).",
        0.0,
        1.0,
    ),
)
