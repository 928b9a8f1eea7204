"""Matmuls of shared attention + MLP blocks (Zamba2) as the layers that run them execute them.

A shared block's weights are stored once, but its work is done at every layer that applies it
(transformers' ``Zamba2HybridLayer``): FLOPs count per application. At each such layer:

* q, k and v read ``input_width`` features (the hidden state joined to the token embeddings,
  2 x hidden); o_proj maps the heads back to hidden;
* with ``attention_adapters``, the layer's own low-rank adapters on q, k and v
  (``input_width -> rank -> input_width`` each, added to the shared projection's output);
* the shared MLP (``gate_up_proj``, one fused matrix, then ``down_proj``) plus the layer's own
  gate/up adapter (``hidden -> rank -> gate + up``);
* with ``layer_projection``, the layer's own ``hidden x hidden`` linear on the block's output.

The adapters and the projection are small and kept whole on every tensor-parallel rank
(``REPLICATED``); they are ``nn.Linear`` modules, so PEFT's ``all-linear`` adapts them too.
"""

from __future__ import annotations

from workbench.core.model import ModelArchitecture
from workbench_compute.shapes import COL, KV, LORA_ALL_LINEAR, LORA_ATTENTION, REPLICATED, ROW, Gemm


def shared_block_gemms(arch: ModelArchitecture, layers: int, stream: str) -> list[Gemm]:
    """Attention, MLP (one fused gate + up projection, then down), adapters and layer projections of
    ``layers`` shared-block applications."""
    sb = arch.shared_blocks
    assert sb is not None
    h, w, r = arch.hidden_size, sb.input_width, sb.adapter_rank
    q_width, kv_width = arch.num_attention_heads * arch.head_dim, arch.num_kv_heads * arch.head_dim
    kv_heads = arch.num_kv_heads
    gemms = [
        Gemm("shared.q_proj", w, q_width, layers, stream, COL, lora=LORA_ATTENTION),
        Gemm("shared.k_proj", w, kv_width, layers, stream, KV, lora=LORA_ATTENTION, kv_heads=kv_heads),
        Gemm("shared.v_proj", w, kv_width, layers, stream, KV, lora=LORA_ATTENTION, kv_heads=kv_heads),
        Gemm("shared.o_proj", q_width, h, layers, stream, ROW, lora=LORA_ATTENTION),
    ]
    if r and sb.attention_adapters:
        for name in ("q", "k", "v"):  # input_width -> rank -> input_width, as transformers builds them
            gemms.append(Gemm(f"adapter.{name}.down", w, r, layers, stream, REPLICATED, lora=LORA_ALL_LINEAR))
            gemms.append(Gemm(f"adapter.{name}.up", r, w, layers, stream, REPLICATED, lora=LORA_ALL_LINEAR))
    gate_up = (2 if arch.gated_mlp else 1) * arch.intermediate_size
    i = arch.intermediate_size
    gemms.append(Gemm("shared.gate_up_proj", h, gate_up, layers, stream, COL, lora=LORA_ALL_LINEAR))
    gemms.append(Gemm("shared.down_proj", i, h, layers, stream, ROW, lora=LORA_ALL_LINEAR))
    if r:
        gemms.append(Gemm("adapter.gate_up.down", h, r, layers, stream, REPLICATED, lora=LORA_ALL_LINEAR))
        gemms.append(Gemm("adapter.gate_up.up", r, gate_up, layers, stream, REPLICATED, lora=LORA_ALL_LINEAR))
    if sb.layer_projection:
        gemms.append(Gemm("layer_projection", h, h, layers, stream, REPLICATED, lora=LORA_ALL_LINEAR))
    return gemms
