"""llama.cpp / GGUF weight storage: ggml tensor types and llama-quantize's per-tensor choices.

A GGUF preset (Q4_K_M, Q8_0, ...) is not one bit width: llama-quantize picks a ggml type per
tensor (``llama_tensor_get_type`` in llama.cpp's ``src/llama-quant.cpp``): the output head at
Q6_K, some layers' ``attn_v`` and ``ffn_down`` at a higher type, 1-D tensors (norms, biases) and
the MoE router left in F32. So a model's size under a preset is summed tensor by tensor
(:func:`plan`), from the tables in ``resources/formats/gguf.yaml`` (types with their block size and
bytes per block, presets with their rules, each with its llama.cpp source).

The tensor list is the llama.cpp layout of a standard-attention decoder (``token_embd``, per block
``attn_q/k/v/output`` and ``ffn_gate/up/down`` or their ``_exps``/``_shexp`` MoE forms, ``output``).
Architectures whose GGUF layout or quantization rules differ (MLA, recurrent mixers, shared blocks,
vision towers, encoders, Falcon's own rules) are refused rather than guessed, and the tensors
built must account for the model's parameter count (what is left must be small 1-D tensors).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from workbench.core.errors import InputError
from workbench.core.model import ModelArchitecture, ModelKind
from workbench.core.params import count_parameters, layer_breakdown
from workbench.core.yaml_cache import load_yaml
from workbench.paths import resources_dir

#: Roles llama-quantize tells apart (tensor_get_category), plus the tensors it never quantizes.
ROLES = ("token_embd", "output", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
#: Families whose checkpoints fuse Q/K/V into ``attn_qkv`` and gate/up into one ``ffn_up`` (Phi-3).
_FUSED = ("phi3",)
#: Families llama-quantize gives rules of their own (LLM_ARCH_FALCON branches), not modelled here.
_OWN_RULES = ("falcon",)


@dataclass(frozen=True, slots=True)
class GgmlType:
    name: str
    id: int
    block: int  # weights per block
    bytes: int  # bytes per block

    @property
    def bits(self) -> float:
        return self.bytes * 8 / self.block

    def row_bytes(self, n: int) -> int:
        return math.ceil(n / self.block) * self.bytes


@dataclass(frozen=True, slots=True)
class Preset:
    id: str
    file_type: int
    base: str
    rules: Mapping[str, tuple[tuple[tuple[str, ...], str], ...]]
    attn_v_after: bool


@dataclass(frozen=True, slots=True)
class Tables:
    types: Mapping[str, GgmlType]
    by_id: Mapping[int, GgmlType]
    fallback: Mapping[str, str]
    presets: Mapping[str, Preset]


@lru_cache(maxsize=1)
def tables() -> Tables:
    """The ggml types and presets of ``resources/formats/gguf.yaml``."""
    data: dict[str, Any] = load_yaml((resources_dir() / "formats" / "gguf.yaml").read_text(encoding="utf-8"))
    types = {name: GgmlType(name, t["id"], t["block"], t["bytes"]) for name, t in data["types"].items()}
    presets = {}
    for pid, p in data["presets"].items():
        rules = {
            role: tuple((tuple(r.get("when", ())), r["type"]) for r in entries)
            for role, entries in (p.get("rules") or {}).items()
        }
        presets[pid] = Preset(pid, p["file_type"], p["base"], rules, bool(p.get("attn_v_after")))
    return Tables(types, {t.id: t for t in types.values()}, dict(data["fallback"]), presets)


def preset(pid: str) -> Preset:
    found = tables().presets.get(pid)
    if found is None:
        raise InputError(f"{pid}: not a GGUF preset ({', '.join(tables().presets)})")
    return found


def preset_bits(pid: str) -> float:
    """Bits per weight of the preset's base type (most of the linear layers), e.g. q4_k_m: 4.5."""
    return tables().types[preset(pid).base].bits


def tensor_bytes(type_name: str, shape: tuple[int, ...]) -> int:
    """Bytes of a tensor of ggml shape ``(ne0, ne1, ...)``: whole blocks along each row."""
    t = tables().types[type_name]
    return t.row_bytes(shape[0]) * math.prod(shape[1:])


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    shape: tuple[int, ...]  # ggml order: ne0 (the row, a matmul's input features) first
    role: str | None  # one of ROLES, or None: never quantized (1-D tensors, the MoE router)
    layer: int | None
    part: str  # where the memory model counts it: linear, expert, embedding, head, plain
    type: str = "F32"

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        return tensor_bytes(self.type, self.shape)


@dataclass(frozen=True, slots=True)
class _Context:
    n: int
    gqa: int
    experts: int
    model_70b: bool


def _holds(cond: str, i: int, c: _Context) -> bool:
    n = c.n
    if cond == "more_bits":
        return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
    if cond == "first_eighth":
        return i < n // 8
    if cond == "first_sixteenth":
        return i < n // 16
    if cond == "first_two":
        return i < 2
    if cond == "first_four":
        return i < 4
    if cond == "gqa_ge_4":
        return c.gqa >= 4
    if cond == "experts_8":
        return c.experts == 8
    if cond == "not_experts_8":
        return c.experts != 8
    if cond == "experts_ge_4":
        return c.experts >= 4
    raise ValueError(f"unknown GGUF rule condition {cond!r}")


def choose_type(p: Preset, role: str, layer: int, ne0: int, c: _Context, tied: bool) -> str:
    """The ggml type llama-quantize gives one quantizable tensor under preset ``p``."""
    t = tables()
    base = t.types[p.base]
    if base.block == 1:  # F32/F16/BF16: not a quantized type, no rules apply
        return p.base
    rule_role = "output" if role == "token_embd" and tied else role
    chosen = p.base
    for when, typ in p.rules.get(rule_role, ()):
        if all(_holds(w, layer, c) for w in when):
            chosen = typ
            break
    if rule_role == "output" and ne0 % base.block:
        chosen = "Q8_0"
    if role == "attn_v" and p.attn_v_after:
        if c.model_70b and chosen in ("Q3_K", "Q4_K"):
            chosen = "Q5_K"
        if c.experts == 8:
            chosen = "Q8_0"
    if ne0 % t.types[chosen].block:
        chosen = t.fallback.get(chosen, "F16")
        if ne0 % t.types[chosen].block:
            chosen = "F16"
    return chosen


def _refusal(arch: ModelArchitecture) -> str | None:
    features = [
        (arch.kind is not ModelKind.DECODER, f"{arch.kind.value} models"),
        (arch.mla is not None, "multi-head latent attention"),
        (arch.recurrent is not None or arch.layer_mixers is not None, "recurrent mixers"),
        (arch.shared_blocks is not None, "shared blocks"),
        (arch.vision_tower is not None or arch.vision is not None, "a vision tower"),
        (arch.indexer is not None, "an attention indexer"),
        (arch.encoder_decoder is not None, "an encoder"),
        ((arch.hf_model_type or arch.family) in _OWN_RULES, "Falcon's own quantization rules"),
    ]
    for present, what in features:
        if present:
            return what
    return None


def model_tensors(arch: ModelArchitecture) -> list[Tensor]:
    """The quantizable tensors of ``arch`` in llama.cpp's layout, plus one F32 tensor holding
    its 1-D parameters (norms, biases) and MoE routers. Refuses what is not modelled."""
    why = _refusal(arch)
    if why is not None:
        raise InputError(f"{arch.name}: GGUF sizes are modelled for standard-attention decoders, not {why}")
    h, hd = arch.hidden_size, arch.head_dim
    q, kv = arch.num_attention_heads * hd, arch.num_kv_heads * hd
    fused = (arch.hf_model_type or arch.family) in _FUSED
    out = [Tensor("token_embd.weight", (h, arch.vocab_size), "token_embd", None, "embedding")]
    if not arch.tie_word_embeddings:
        out.append(Tensor("output.weight", (h, arch.vocab_size), "output", None, "head"))
    routers = 0
    for i in range(arch.num_layers):
        b = f"blk.{i}."
        if fused:
            out.append(Tensor(b + "attn_qkv.weight", (h, q + 2 * kv), "attn_v", i, "linear"))
        else:
            out += [
                Tensor(b + "attn_q.weight", (h, q), "attn_q", i, "linear"),
                Tensor(b + "attn_k.weight", (h, kv), "attn_k", i, "linear"),
                Tensor(b + "attn_v.weight", (h, kv), "attn_v", i, "linear"),
            ]
        out.append(Tensor(b + "attn_output.weight", (q, h), "attn_output", i, "linear"))
        moe = arch.moe
        if moe is not None and layer_breakdown(arch, i).experts:
            e, inner = moe.num_experts, moe.expert_intermediate_size
            routers += h * e
            if arch.gated_mlp:
                out.append(Tensor(b + "ffn_gate_exps.weight", (h, inner, e), "ffn_gate", i, "expert"))
            out += [
                Tensor(b + "ffn_up_exps.weight", (h, inner, e), "ffn_up", i, "expert"),
                Tensor(b + "ffn_down_exps.weight", (inner, h, e), "ffn_down", i, "expert"),
            ]
            shared = moe.shared_expert_intermediate_size or moe.num_shared_experts * inner
            if moe.num_shared_experts and shared:
                out += _ffn(b, "_shexp", h, shared, arch.gated_mlp, False, i)
                if moe.shared_expert_gate:
                    routers += h
        elif i not in arch.ffn_free_layers:
            out += _ffn(b, "", h, arch.intermediate_size, arch.gated_mlp, fused, i)
    matrices = sum(t.elements for t in out)
    rest = count_parameters(arch).total - matrices
    # What is left must be 1-D tensors and routers: at most a few hidden-size vectors per block.
    small = routers + (arch.num_layers + 2) * 16 * max(h, q, kv)
    if rest < 0 or rest > small:
        raise InputError(
            f"{arch.name}: its {count_parameters(arch).total:,} parameters do not match llama.cpp's "
            f"tensor layout ({matrices:,} in matrices); GGUF sizes are not modelled for it"
        )
    out.append(Tensor("1-D tensors and routers", (rest,), None, None, "plain"))
    return out


def _ffn(b: str, suffix: str, h: int, inner: int, gated: bool, fused: bool, i: int) -> list[Tensor]:
    if fused:  # Phi-3: gate and up in one ffn_up of twice the width
        return [
            Tensor(f"{b}ffn_up{suffix}.weight", (h, 2 * inner), "ffn_up", i, "linear"),
            Tensor(f"{b}ffn_down{suffix}.weight", (inner, h), "ffn_down", i, "linear"),
        ]
    gate = [Tensor(f"{b}ffn_gate{suffix}.weight", (h, inner), "ffn_gate", i, "linear")] if gated else []
    return gate + [
        Tensor(f"{b}ffn_up{suffix}.weight", (h, inner), "ffn_up", i, "linear"),
        Tensor(f"{b}ffn_down{suffix}.weight", (inner, h), "ffn_down", i, "linear"),
    ]


def plan(arch: ModelArchitecture, pid: str) -> list[Tensor]:
    """Every tensor of ``arch`` with the ggml type preset ``pid`` stores it in."""
    p = preset(pid)
    experts = arch.moe.num_experts if arch.moe is not None else 0
    gqa = arch.num_attention_heads // arch.num_kv_heads
    # llama.cpp's LLM_TYPE_70B: 80 blocks with grouped KV heads (Llama 2/3 70B, Qwen2 72B).
    c = _Context(arch.num_layers, gqa, experts, arch.num_layers == 80 and gqa > 1)
    tied = arch.tie_word_embeddings
    out = []
    for t in model_tensors(arch):
        if t.role is None:
            out.append(t)
            continue
        typ = choose_type(p, t.role, t.layer if t.layer is not None else 0, t.shape[0], c, tied)
        out.append(Tensor(t.name, t.shape, t.role, t.layer, t.part, typ))
    return out


@dataclass(frozen=True, slots=True)
class PresetBytes:
    """Bytes and parameters of a model under a preset, by where the memory model counts them."""

    preset: str
    bytes: Mapping[str, int]
    params: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.bytes.values())

    def per_param(self, part: str) -> float:
        """Average bytes per parameter of ``part`` (0 when the model has none there)."""
        n = self.params.get(part, 0)
        return self.bytes.get(part, 0) / n if n else 0.0

    def dense_matmul(self) -> float:
        """Average bytes per weight a token's dense matmuls read: the blocks' matrices and the LM
        head (the token embedding when the head is tied to it)."""
        head = "head" if self.params.get("head") else "embedding"
        n = self.params.get("linear", 0) + self.params.get(head, 0)
        return (self.bytes.get("linear", 0) + self.bytes.get(head, 0)) / n if n else 0.0


_SUMMARIES: dict[tuple[int, str], tuple[ModelArchitecture, PresetBytes]] = {}


def preset_bytes(arch: ModelArchitecture, pid: str) -> PresetBytes:
    """Tensor-by-tensor sum of ``arch`` under preset ``pid``, cached per model object."""
    key = (id(arch), pid)
    hit = _SUMMARIES.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    by: dict[str, int] = {}
    n: dict[str, int] = {}
    for t in plan(arch, pid):
        by[t.part] = by.get(t.part, 0) + t.bytes
        n[t.part] = n.get(t.part, 0) + t.elements
    found = PresetBytes(pid, by, n)
    if len(_SUMMARIES) > 256:
        _SUMMARIES.clear()
    _SUMMARIES[key] = (arch, found)
    return found
