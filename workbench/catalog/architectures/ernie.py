"""ERNIE-4.5 MoE: routed + shared experts on the layers moe_layer_start/end/interval select."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, moe_from_layers
from workbench.catalog.architectures.registry import reads


@reads(
    "ernie4_5_moe",
    family="ernie",
    reference="Ernie4_5_MoeForCausalLM",
    defaults={
        "vocab_size": 103424,
        "hidden_size": 2560,
        "intermediate_size": 12288,
        "num_hidden_layers": 28,
        "num_attention_heads": 20,
        "num_key_value_heads": 4,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
        "use_bias": False,
        "hidden_act": "silu",
        "moe_num_experts": 64,
        "moe_k": 6,
        "moe_intermediate_size": 1536,
        "moe_num_shared_experts": 2,
        "moe_layer_start_index": 1,
        "moe_layer_end_index": -1,
        "moe_layer_interval": 1,
    },
)
def read_ernie4_5_moe(c: Cfg, notes: list[str]) -> dict[str, Any]:
    if c.flag("use_bias"):
        # transformers gives q/k/v/o, dense and shared-expert FFNs and the LM head biases but the
        # fused routed experts none: a split the fields do not describe; no release uses it.
        raise c.fail("use_bias", "= true is not supported (biases on all but the routed experts)")
    f = decoder_base(c, notes)
    n = f["num_layers"]
    start = c.integer("moe_layer_start_index", minimum=0)
    end = c.integer("moe_layer_end_index", minimum=-1)
    end = n - 1 if end == -1 else end  # Ernie4_5_MoeConfig: -1 means the last layer
    step = c.integer("moe_layer_interval")
    # Ernie4_5_MoeDecoderLayer: an MoE block when (i + 1) % interval == 0 and start <= i <= end.
    f["moe"] = moe_from_layers(
        c,
        n,
        lambda i: (i + 1) % step == 0 and start <= i <= end,
        num_experts=c.integer("moe_num_experts"),
        experts_per_token=c.integer("moe_k"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        num_shared_experts=c.integer("moe_num_shared_experts", minimum=0),
        # Ernie4_5_MoeStatics holds e_score_correction_bias as an nn.Parameter.
        router_bias=True,
        router_bias_parameter=True,
    )
    return f
