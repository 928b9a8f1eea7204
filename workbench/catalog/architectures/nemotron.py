"""Nemotron-H (NVIDIA): Mamba-2, attention, MLP and MoE blocks, one part per block.

Every block is a single pre-norm residual branch holding one part, picked by
``hybrid_override_pattern`` (``M`` Mamba-2, ``*`` attention, ``-`` MLP, ``E`` MoE) or by the
``layers_block_type`` list transformers 5 writes. A block is represented as what it is: a mixer
block without FFN, or an FFN block without mixer, each with its one norm. Attention has no
position encoding and no biases; MLPs and experts are plain (up, down) with ``relu2``.
"""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, moe_from_layers, read_heads
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import mamba2_mixer
from workbench.core.model import LayerMixer, PositionEmbedding

_PATTERN = {"M": "linear_attention", "*": "full_attention", "-": "mlp", "E": "moe"}
_MIXERS = {
    "linear_attention": LayerMixer.RECURRENT,
    "mamba": LayerMixer.RECURRENT,
    "full_attention": LayerMixer.ATTENTION,
    "attention": LayerMixer.ATTENTION,
    "mlp": LayerMixer.NONE,
    "moe": LayerMixer.NONE,
}


def _block_types(c: Cfg) -> list[str]:
    """Block types as transformers resolves them: an explicit list, else the pattern string."""
    for key in ("layers_block_type", "layer_types"):
        if c.has(key):
            types = c.data[key]
            if not isinstance(types, list) or not types:
                raise c.fail(key, "must be a non-empty list of block types")
            bad = [t for t in types if t not in _MIXERS]
            if bad:
                raise c.fail(key, f"holds block types {sorted(set(map(str, bad)))} Nemotron-H does not have")
            legacy = {"mamba": "linear_attention", "attention": "full_attention"}
            return [legacy.get(t, t) for t in types]
    pattern = c.text("hybrid_override_pattern")
    if pattern is None:
        return ["linear_attention", "moe", "full_attention", "mlp"]  # NemotronHConfig's default
    bad = sorted(set(pattern) - set(_PATTERN))
    if not pattern or bad:
        raise c.fail("hybrid_override_pattern", f"must be a string of M, *, - and E, got {pattern!r}")
    return [_PATTERN[ch] for ch in pattern]


@reads(
    "nemotron_h",
    family="nemotron",
    reference="NemotronHForCausalLM",
    defaults={
        "vocab_size": 131072,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 4096,
        "intermediate_size": 21504,
        "mlp_hidden_act": "relu2",
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "ssm_state_size": 128,
        "mamba_num_heads": 128,
        "mamba_head_dim": 64,
        "n_groups": 8,
        "conv_kernel": 4,
        "chunk_size": 128,
        "use_conv_bias": True,
        "use_bias": False,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 7688,
        "moe_shared_expert_intermediate_size": 7688,
        "num_nextn_predict_layers": 0,
    },
)
def read_nemotron_h(c: Cfg, notes: list[str]) -> dict[str, Any]:
    types = _block_types(c)
    n = len(types)
    if c.has("num_hidden_layers") and c.integer("num_hidden_layers") != n:
        notes.append(
            f"num_hidden_layers ({c.integer('num_hidden_layers')}) disagrees with the {n} blocks of the "
            "layer pattern; the pattern wins, as in transformers"
        )
    hidden = c.integer("hidden_size")
    heads = read_heads(c, hidden)
    if not c.has("head_dim") and c.has("attention_head_dim"):
        # Older Nemotron-H configs name it attention_head_dim (transformers 5 reads head_dim, whose
        # default, 128, is what every published checkpoint uses); the checkpoint's own value wins.
        heads["head_dim"] = c.integer("attention_head_dim")
        c.defaulted.pop("head_dim", None)
    mixers = tuple(_MIXERS[t] for t in types)
    mlp_bias = c.flag("mlp_bias")
    if mlp_bias and "moe" in types:
        raise c.fail("mlp_bias", "with MoE blocks is not read: Nemotron-H experts carry no biases")
    use_bias = c.flag("use_bias")
    if c.integer("num_nextn_predict_layers", minimum=0):
        notes.append(
            "the multi-token-prediction (MTP) blocks (num_nextn_predict_layers) are not counted: "
            "transformers does not build them, and inference does not need them"
        )
    moe = None
    if "moe" in types:
        moe = moe_from_layers(
            c,
            n,
            lambda i: types[i] == "moe",
            num_experts=c.integer("n_routed_experts", "num_local_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=1,
            shared_expert_intermediate_size=c.integer("moe_shared_expert_intermediate_size"),
            # NemotronHTopkRouter holds e_score_correction_bias as a buffer, like DeepSeek-V3's.
            router_bias=True,
            # Nemotron-3 Super: experts on a latent (fc1_latent_proj / fc2_latent_proj around them).
            latent_size=c.opt_integer("moe_latent_size"),
        )
    recurrent = None
    if LayerMixer.RECURRENT in mixers:
        recurrent = mamba2_mixer(
            hidden,
            heads=c.integer("mamba_num_heads"),
            head_dim=c.integer("mamba_head_dim"),
            state_size=c.integer("ssm_state_size"),
            groups=c.integer("n_groups", "mamba_n_groups"),
            conv_kernel=c.integer("conv_kernel", "mamba_d_conv"),
            chunk_size=c.integer("chunk_size", "mamba_chunk_size"),
            in_proj_bias=use_bias,
            out_proj_bias=use_bias,
            conv_bias=c.flag("use_conv_bias"),
        )
    return {
        "num_layers": n,
        "hidden_size": hidden,
        **heads,
        "intermediate_size": c.integer("intermediate_size"),
        "gated_mlp": False,
        "activation": c.text("mlp_hidden_act"),
        "mlp_bias": mlp_bias,
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "max_position_embeddings": c.integer("max_position_embeddings"),
        # Nemotron-H attention applies no position encoding (the Mamba layers carry order).
        "position_embedding": PositionEmbedding.NONE,
        "norms_per_layer": 1,
        "single_part_norms": 1,
        "layer_mixers": mixers,
        "ffn_free_layers": tuple(
            i for i, t in enumerate(types) if t in ("linear_attention", "full_attention")
        ),
        "recurrent": recurrent,
        "moe": moe,
    }
