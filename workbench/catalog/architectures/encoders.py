"""Encoders and encoder-decoders: BERT/RoBERTa, T5/mT5, ViT."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, read_heads
from workbench.catalog.architectures.registry import reads
from workbench.core.model import (
    EncoderDecoderConfig,
    Head,
    ModelKind,
    NormKind,
    PositionEmbedding,
    VisionConfig,
)


@reads(
    "bert",
    family="bert",
    reference="BertModel",
    defaults={
        "vocab_size": 30522,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "hidden_act": "gelu",
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "tie_word_embeddings": True,
    },
)
@reads(
    "roberta",
    family="bert",
    reference="RobertaModel",
    defaults={
        "vocab_size": 50265,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "hidden_act": "gelu",
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "tie_word_embeddings": True,
    },
)
@reads(
    "xlm-roberta",
    family="bert",
    reference="XLMRobertaModel",
    defaults={
        "vocab_size": 30522,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "hidden_act": "gelu",
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "tie_word_embeddings": True,
    },
)
def read_bert(c: Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("hidden_size")
    return {
        "kind": ModelKind.ENCODER,
        "head": Head.BASE,
        "num_layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        **read_heads(c, hidden),
        "intermediate_size": c.integer("intermediate_size"),
        "gated_mlp": False,
        "activation": c.text("hidden_act", default="gelu"),
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "final_norm": False,
        "embedding_norm": True,
        "attention_bias": True,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": c.integer("max_position_embeddings"),
        "type_vocab_size": c.integer("type_vocab_size", minimum=0),
        "pooler": True,
    }


@reads(
    "t5",
    family="t5",
    reference="T5ForConditionalGeneration",
    defaults={
        "vocab_size": 32128,
        "d_model": 512,
        "d_kv": 64,
        "d_ff": 2048,
        "num_layers": 6,
        "num_heads": 8,
        "relative_attention_num_buckets": 32,
        "feed_forward_proj": "relu",
        "tie_word_embeddings": True,
    },
)
@reads(
    "mt5",
    family="t5",
    reference="MT5ForConditionalGeneration",
    defaults={
        "vocab_size": 250112,
        "d_model": 512,
        "d_kv": 64,
        "d_ff": 1024,
        "num_layers": 8,
        "num_heads": 6,
        "relative_attention_num_buckets": 32,
        "feed_forward_proj": "gated-gelu",
        "tie_word_embeddings": True,
    },
)
def read_t5(c: Cfg, notes: list[str]) -> dict[str, Any]:
    proj = c.text("feed_forward_proj") or "relu"
    gated = proj.startswith("gated-")
    act = proj.removeprefix("gated-")
    num_layers = c.integer("num_layers")
    heads = c.integer("num_heads")
    return {
        "kind": ModelKind.ENCODER_DECODER,
        "head": Head.SEQ2SEQ_LM,
        "num_layers": num_layers,
        "hidden_size": c.integer("d_model"),
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": c.integer("d_kv"),
        "intermediate_size": c.integer("d_ff"),
        "gated_mlp": gated,
        "activation": "gelu_new" if act == "gelu" and gated else act,
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "position_embedding": PositionEmbedding.RELATIVE_BIAS,
        "max_position_embeddings": c.integer("n_positions", default=512),
        "encoder_decoder": EncoderDecoderConfig(
            num_decoder_layers=c.integer("num_decoder_layers", default=num_layers),
            relative_attention_num_buckets=c.integer("relative_attention_num_buckets"),
        ),
    }


@reads(
    "vit",
    family="vit",
    reference="ViTModel",
    defaults={
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "hidden_act": "gelu",
        "image_size": 224,
        "patch_size": 16,
        "num_channels": 3,
        "qkv_bias": True,
    },
)
def read_vit(c: Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("hidden_size")
    vision = VisionConfig(
        image_size=c.integer("image_size"),
        patch_size=c.integer("patch_size"),
        num_channels=c.integer("num_channels"),
    )
    if c.integer("pooler_output_size", default=hidden) != hidden:
        raise c.fail("pooler_output_size", "must equal hidden_size to be counted")
    qkv_bias = c.flag("qkv_bias")
    return {
        "kind": ModelKind.ENCODER,
        "head": Head.BASE,
        "num_layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        **read_heads(c, hidden),
        "intermediate_size": c.integer("intermediate_size"),
        "gated_mlp": False,
        "activation": c.text("hidden_act", default="gelu"),
        # A ViT has no token vocabulary; the field is required, and unused when ``vision`` is set.
        "vocab_size": 1,
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "attention_bias": qkv_bias,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": vision.num_patches + 1,
        "pooler": True,
        "vision": vision,
    }
