"""Regenerate the tiny checkpoints in this folder (needs torch, transformers, safetensors).

    python tests/data/safetensors/generate.py

Each model is built from a small config with fixed seeds and written with ``save_pretrained``
(safetensors), so the files are what transformers really writes: tied weights stored once,
persistent buffers included. Total size stays well under 1 MB.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from transformers import (
    DeepseekV3Config,
    DeepseekV3ForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    Mistral3Config,
    Mistral3ForConditionalGeneration,
)

HERE = Path(__file__).resolve().parent


def _save(model: torch.nn.Module, folder: Path, **kwargs: object) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    model.save_pretrained(folder, **kwargs)
    for extra in ("generation_config.json",):
        (folder / extra).unlink(missing_ok=True)


def main() -> None:
    torch.manual_seed(0)
    llama = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
            max_position_embeddings=128, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        )
    )
    _save(llama.to(torch.bfloat16), HERE / "tiny-llama")

    deepseek = DeepseekV3ForCausalLM(
        DeepseekV3Config(
            vocab_size=256, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8,
            n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1, n_group=2, topk_group=1,
            q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
            max_position_embeddings=128, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        )
    )
    _save(deepseek, HERE / "tiny-deepseek-v3-sharded", max_shard_size="40KB")

    index_only = HERE / "index-only"
    if index_only.exists():
        shutil.rmtree(index_only)
    index_only.mkdir()
    for name in ("config.json", "model.safetensors.index.json"):
        shutil.copy(HERE / "tiny-deepseek-v3-sharded" / name, index_only / name)

    mistral3 = Mistral3ForConditionalGeneration(
        Mistral3Config(
            text_config={
                "model_type": "mistral", "vocab_size": 256, "hidden_size": 32, "intermediate_size": 64,
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 8, "max_position_embeddings": 128, "tie_word_embeddings": False,
                "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
            },
            vision_config={
                "model_type": "pixtral", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 4, "head_dim": 8, "image_size": 64, "patch_size": 16,
            },
            image_token_index=10, tie_word_embeddings=False,
        )
    )
    _save(mistral3.to(torch.bfloat16), HERE / "tiny-mistral3")

    # A deliberately truncated file: a valid header whose tensor data is cut short.
    source = (HERE / "tiny-llama" / "model.safetensors").read_bytes()
    (HERE / "truncated.safetensors").write_bytes(source[: len(source) // 2])
    print(json.dumps({p.name: p.stat().st_size for p in sorted(HERE.rglob("*")) if p.is_file()}, indent=1))


if __name__ == "__main__":
    main()
