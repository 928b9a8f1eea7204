"""GPT-2, GPT-NeoX (Pythia), OPT, StarCoder2 and Falcon: LayerNorm decoders with biases."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, read_heads, read_rope
from workbench.catalog.architectures.registry import reads
from workbench.core.model import NormKind, PositionEmbedding


@reads(
    "gpt2",
    family="gpt2",
    reference="GPT2LMHeadModel",
    defaults={
        "vocab_size": 50257,
        "n_positions": 1024,
        "n_embd": 768,
        "n_layer": 12,
        "n_head": 12,
        "n_inner": None,
        "activation_function": "gelu_new",
        "tie_word_embeddings": True,
        "attn_pdrop": 0.1,
        "resid_pdrop": 0.1,
        "embd_pdrop": 0.1,
    },
)
def read_gpt2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("n_embd", "hidden_size")
    heads = c.integer("n_head", "num_attention_heads")
    if hidden % heads:
        raise c.fail("n_head", f"({heads}) must divide n_embd ({hidden})")
    return {
        "num_layers": c.integer("n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": hidden // heads,
        "intermediate_size": c.integer("n_inner", default=4 * hidden),
        "gated_mlp": False,
        "activation": c.text("activation_function", default="gelu_new"),
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        # GPT2Attention.attn_dropout / resid_dropout (after c_proj and after the MLP), GPT2Model.drop.
        "attention_dropout": c.probability("attn_pdrop"),
        "hidden_dropout": c.probability("resid_pdrop"),
        "embedding_dropout": c.probability("embd_pdrop"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "attention_bias": True,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": c.integer("n_positions", "max_position_embeddings"),
    }


@reads(
    "gpt_neox",
    family="gpt-neox",
    reference="GPTNeoXForCausalLM",
    defaults={
        "vocab_size": 50432,
        "hidden_size": 6144,
        "num_hidden_layers": 44,
        "num_attention_heads": 64,
        "intermediate_size": 24576,
        "hidden_act": "gelu",
        "max_position_embeddings": 2048,
        "use_parallel_residual": True,
        "attention_bias": True,
        "tie_word_embeddings": False,
    },
)
def read_gpt_neox(c: Cfg, notes: list[str]) -> dict[str, Any]:
    """GPT-NeoX (Pythia, GPT-NeoX-20B): LayerNorms with biases before attention and MLP (also with
    the parallel residual), fused QKV and output projections with biases (``attention_bias``), a
    4x GELU MLP with biases, rotary embeddings on part of each head (no parameters), and an
    output head of its own (``embed_out``, no bias)."""
    f = decoder_base(c, notes)
    if f["rope_theta"] is None:  # configs before transformers 5 name the base rotary_emb_base
        f["rope_theta"] = c.number("rotary_emb_base")
    bias = c.flag("attention_bias")
    f.update(
        norm_kind=NormKind.LAYERNORM,
        norm_bias=True,
        norms_per_layer=2,
        gated_mlp=False,
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=True,
        parallel_attention_mlp=c.flag("use_parallel_residual"),
        # post_attention_dropout, post_mlp_dropout and emb_dropout all use hidden_dropout.
        hidden_dropout=c.probability("hidden_dropout"),
        embedding_dropout=c.probability("hidden_dropout"),
    )
    return f


@reads(
    "opt",
    family="opt",
    reference="OPTForCausalLM",
    defaults={
        "vocab_size": 50272,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "ffn_dim": 3072,
        "num_attention_heads": 12,
        "max_position_embeddings": 2048,
        "do_layer_norm_before": True,
        "_remove_final_layer_norm": False,
        "activation_function": "relu",
        "layer_norm_elementwise_affine": True,
        "enable_bias": True,
        "tie_word_embeddings": True,
    },
)
def read_opt(c: Cfg, notes: list[str]) -> dict[str, Any]:
    """OPT (Zhang et al. 2022): pre-LayerNorm blocks with biases, separate Q/K/V/out projections,
    a ReLU MLP (``ffn_dim``), learned positions with two extra rows (OPT's offset of 2, counted as
    extra parameters), and the output head tied to the embedding. OPT-350M's projected embeddings
    and post-LayerNorm are refused rather than counted wrong."""
    hidden = c.integer("hidden_size")
    heads = read_heads(c, hidden)
    projected = c.opt_integer("word_embed_proj_dim")
    if projected is not None and projected != hidden:
        raise c.fail(
            "word_embed_proj_dim",
            f"({projected}) differs from hidden_size ({hidden}): "
            "projected embeddings (OPT-350M) are not supported",
        )
    if not c.flag("do_layer_norm_before") or c.flag("_remove_final_layer_norm"):
        raise c.fail(
            "do_layer_norm_before", "is false: post-LayerNorm OPT blocks (OPT-350M) are not supported"
        )
    if not c.flag("layer_norm_elementwise_affine"):
        raise c.fail(
            "layer_norm_elementwise_affine", "is false: LayerNorms without weights are not supported"
        )
    bias = c.flag("enable_bias")
    return {
        "num_layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        **heads,
        "intermediate_size": c.integer("ffn_dim"),
        "gated_mlp": False,
        "activation": c.text("activation_function", default="relu"),
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "norms_per_layer": 2,
        "attention_bias": bias,
        "attention_out_bias": bias,
        "mlp_bias": bias,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": c.integer("max_position_embeddings"),
        "extra_parameters": 2 * hidden,  # OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows
    }


@reads(
    "starcoder2",
    family="starcoder",
    reference="Starcoder2ForCausalLM",
    defaults={
        "vocab_size": 49152,
        "hidden_size": 3072,
        "intermediate_size": 12288,
        "num_hidden_layers": 30,
        "num_attention_heads": 24,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": True,
        "hidden_act": "gelu_pytorch_tanh",
        "sliding_window": None,
        "use_bias": True,
    },
)
def read_starcoder2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    bias = c.flag("use_bias")
    f.update(
        norm_kind=NormKind.LAYERNORM,
        norm_bias=True,
        gated_mlp=False,
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=bias,
        # After o_proj, after the MLP, and on the embeddings.
        hidden_dropout=c.probability("residual_dropout"),
        embedding_dropout=c.probability("embedding_dropout"),
    )
    return f


@reads(
    "falcon",
    family="falcon",
    reference="FalconForCausalLM",
    defaults={
        "vocab_size": 65024,
        "hidden_size": 4544,
        "num_hidden_layers": 32,
        "num_attention_heads": 71,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": True,
        "multi_query": True,
        "new_decoder_architecture": False,
        "parallel_attn": True,
        "bias": False,
        "alibi": False,
        "num_ln_in_parallel_attn": None,
    },
)
def read_falcon(c: Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads", "n_head")
    if hidden % heads:
        raise c.fail("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    new_arch = c.flag("new_decoder_architecture")
    if new_arch:
        kv = c.integer("num_kv_heads", "n_head_kv", default=heads)
    else:
        kv = 1 if c.flag("multi_query") else heads
    if heads % kv:
        raise c.fail("num_kv_heads", f"({kv}) must divide num_attention_heads ({heads})")
    parallel = c.flag("parallel_attn")
    ln_parallel = c.opt_integer("num_ln_in_parallel_attn") or (2 if new_arch else 1)
    bias = c.flag("bias")
    return {
        "num_layers": c.integer("num_hidden_layers", "n_layer"),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": hidden // heads,
        "intermediate_size": c.integer("ffn_hidden_size", default=4 * hidden),
        "gated_mlp": False,
        "activation": "gelu",
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "norms_per_layer": 2 if not parallel else ln_parallel,
        "attention_bias": bias,
        "attention_out_bias": bias,
        "mlp_bias": bias,
        "parallel_attention_mlp": parallel,
        "position_embedding": PositionEmbedding.ALIBI if c.flag("alibi") else PositionEmbedding.ROPE,
        "max_position_embeddings": c.integer("max_position_embeddings", default=2048),
        **read_rope(c),
    }
