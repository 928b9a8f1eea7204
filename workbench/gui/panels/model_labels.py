"""Labels people read in the model editor: "Layers", "Hidden size (d_model)", "KV heads" instead of
the field names ("num layers", "hf model type"); the unit where a field has one. The field name
stays in each tooltip, so a reader can match it to a config.json key.
"""

from __future__ import annotations

import re

#: Field path -> (label, unit or "").
LABELS: dict[str, tuple[str, str]] = {
    "name": ("Name", ""),
    "family": ("Family", ""),
    "kind": ("Architecture kind", ""),
    "hf_model_type": ("Hugging Face model type", ""),
    "head": ("Output head", ""),
    "num_layers": ("Layers", ""),
    "hidden_size": ("Hidden size (model width)", ""),
    "num_attention_heads": ("Attention heads", ""),
    "num_kv_heads": ("KV heads (GQA groups)", ""),
    "head_dim": ("Head dimension", ""),
    "intermediate_size": ("MLP inner size", ""),
    "gated_mlp": ("Gated MLP (SwiGLU/GeGLU)", ""),
    "activation": ("Activation function", ""),
    "vocab_size": ("Vocabulary size", "tokens"),
    "tie_word_embeddings": ("Input and output embeddings shared", ""),
    "norm_kind": ("Normalization", ""),
    "norm_bias": ("Norms have a bias", ""),
    "norms_per_layer": ("Norms per layer", ""),
    "qk_norm": ("Query/key norm", ""),
    "qk_norm_full_width": ("Query/key norm over the full width", ""),
    "attention_sinks": ("Attention sinks", ""),
    "attention_output_gate": ("Attention output gate", ""),
    "final_norm": ("Norm after the last layer", ""),
    "embedding_norm": ("Norm after the embedding", ""),
    "attention_bias": ("Q/K/V projections have a bias", ""),
    "attention_out_bias": ("Attention output has a bias", ""),
    "mlp_bias": ("MLP has biases", ""),
    "lm_head_bias": ("Output head has a bias", ""),
    "parallel_attention_mlp": ("Attention and MLP in parallel", ""),
    "attention_dropout": ("Attention dropout", "probability"),
    "hidden_dropout": ("Hidden dropout", "probability"),
    "embedding_dropout": ("Embedding dropout", "probability"),
    "attention_logit_softcap": ("Attention logit soft cap", ""),
    "final_logit_softcap": ("Final logit soft cap", ""),
    "position_embedding": ("Position encoding", ""),
    "max_position_embeddings": ("Longest context", "tokens"),
    "rope_theta": ("RoPE base (theta)", ""),
    "rope_scaling": ("RoPE scaling (JSON)", ""),
    "type_vocab_size": ("Token type vocabulary", "types"),
    "pooler": ("Pooler layer", ""),
    "layer_mixers": ("Mixer per layer", ""),
    "ffn_free_layers": ("Layers without an MLP", ""),
    "single_part_norms": ("Norms with one weight vector", ""),
    "approximate": ("Approximate architecture", ""),
    "torch_dtype": ("Stored weight format", ""),
    "extra_parameters": ("Other parameters", "params"),
    "source": ("Source", ""),
    "moe.num_experts": ("Experts", ""),
    "moe.experts_per_token": ("Experts per token", ""),
    "moe.expert_intermediate_size": ("Expert MLP inner size", ""),
    "moe.num_shared_experts": ("Shared experts", ""),
    "moe.shared_expert_intermediate_size": ("Shared expert inner size", ""),
    "moe.dense_layers": ("Dense layers first", "layers"),
    "moe.moe_layer_interval": ("MoE every n-th layer", ""),
    "mla.q_lora_rank": ("Query low rank", ""),
    "mla.kv_lora_rank": ("KV latent rank", ""),
    "mla.qk_rope_head_dim": ("RoPE part of the head", ""),
    "mla.qk_nope_head_dim": ("Non-RoPE part of the head", ""),
    "mla.v_head_dim": ("Value head dimension", ""),
    "sliding_window.window": ("Window", "tokens"),
    "sliding_window.layers": ("Layers with the window", ""),
    "vision.image_size": ("Image size", "px"),
    "vision.patch_size": ("Patch size", "px"),
    "vision.num_channels": ("Colour channels", ""),
    "vision.cls_token": ("Class token", ""),
    "recurrent.state_size": ("State size", ""),
    "recurrent.conv_kernel": ("Convolution kernel", ""),
    "recurrent.chunk_size": ("Chunk size", "tokens"),
    "encoder_decoder.num_decoder_layers": ("Decoder layers", ""),
}

#: Words written as people write them.
_WORDS = {"num": "number of", "kv": "KV", "qk": "QK", "mlp": "MLP", "moe": "MoE", "lm": "LM", "hf": "Hugging Face",
          "rope": "RoPE", "ssm": "SSM", "fp32": "fp32", "dim": "dimension", "conv": "convolution",
          "lora": "low-rank", "cls": "class", "mla": "MLA", "px": "px", "id": "ID"}


def humanize(name: str) -> str:
    """``num_experts`` -> ``Number of experts``, ``ssm_state_fp32`` -> ``SSM state fp32``."""
    words = [_WORDS.get(word, word) for word in re.split(r"_+", name) if word]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def label_for(path: str) -> str:
    """The editor's label for a field path: its name for people, with its unit."""
    label, unit = LABELS.get(path, (humanize(path.rsplit(".", 1)[-1]), ""))
    return f"{label} ({unit})" if unit and unit != "probability" else label


def tooltip_for(path: str, description: str) -> str:
    """The field's description, then its name as config files and the project file spell it."""
    unit = LABELS.get(path, ("", ""))[1]
    parts = [description.strip()] if description.strip() else []
    if unit == "probability":
        parts.append("A probability from 0 to 1.")
    parts.append(f"Field: {path}")
    return "\n".join(parts)
