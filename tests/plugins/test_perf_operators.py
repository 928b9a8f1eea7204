"""The per-operator time model: the kernels of a pass hold exactly the model's weights, each kernel
costs what its shape says, and the profiles are what the published kernel data give.

Sources: the kernel rows of plugins/workbench_performance/data/kernels/*.yaml (each with its
citation); DeepGEMM's README table (deepseek-ai/DeepGEMM@327ec92f:README.md) for the FP8 rows
re-predicted below.
"""

from __future__ import annotations

import numpy as np
import pytest
from workbench.catalog.models import resolve_model
from workbench_performance.kernels.data import load_kernel_data
from workbench_performance.model_constants import weight_elements
from workbench_performance.operators import derive
from workbench_performance.operators.cost import graph_arrays, pass_kernels
from workbench_performance.operators.graph import forward_graph
from workbench_performance.operators.profiles import all_profiles, profile_for

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "deepseek-v3", "mixtral-8x7b", "gpt-oss-120b",
          "qwen3-next-80b-a3b", "nemotron-h-56b", "t5-base", "gpt2", "jamba-1.5-mini")


def _arch(model_id: str):  # type: ignore[no-untyped-def]
    model = resolve_model(model_id)
    return getattr(model, "architecture", model)


@pytest.mark.parametrize("model_id", MODELS)
@pytest.mark.parametrize(("tp", "ep"), [(1, 1), (4, 1), (8, 8)])
def test_the_kernels_hold_exactly_the_weights_the_roofline_counts(model_id: str, tp: int, ep: int) -> None:
    arch = _arch(model_id)
    if ep > 1 and arch.moe is None:
        ep = 1
    graph = forward_graph(arch, tp, ep)
    w = weight_elements(arch, tp, ep)
    dense = sum(g.elements for g in graph.gemms if not g.expert)
    experts = sum(g.elements for g in graph.gemms if g.expert)
    assert dense == pytest.approx(w.dense, rel=1e-9)
    assert experts == pytest.approx(w.experts, rel=1e-9, abs=1e-6)
    # the standard families are read kernel by kernel, not lumped
    if model_id in ("llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3"):
        assert "other" not in {g.name for g in graph.gemms}


def _llama_pass(tokens, prompts=None, **kw):  # type: ignore[no-untyped-def]
    arch = _arch("llama-3.1-8b")
    ga = graph_arrays(forward_graph(arch, 1, 1), 1)
    args = dict(dtype="bf16", peak_flops=989.4e12, bandwidth=3.35e12, tokens=tokens,
                prompts=tokens if prompts is None else prompts, ep=1, act_bytes=2.0, weight_bytes=2.0,
                expert_weight_bytes=0.0, attention_flops=0.0, attention_bytes=0.0, context=1024.0)
    args.update(kw)
    return pass_kernels(ga, profile_for("h100-sxm"), **args)


def test_decode_streams_weights_and_prefill_computes() -> None:
    decode = _llama_pass(8.0)
    prefill = _llama_pass(4096.0, prompts=1.0)
    assert decode.compute_s == 0.0 and decode.memory_s > 0
    assert prefill.compute_s > 5 * prefill.memory_s  # norms and activations stream ~10% of a prompt's time
    # more rows never make a pass faster
    times = [(_llama_pass(float(t)).memory_s + _llama_pass(float(t)).compute_s) for t in (1, 8, 64, 65, 128, 1000, 4096)]
    assert times == sorted(times)


def test_a_pass_over_an_array_of_configurations_equals_each_alone() -> None:
    tokens = np.array([1.0, 37.0, 512.0, 4096.0])
    many = _llama_pass(tokens, prompts=tokens, attention_flops=tokens * 1e9, context=np.array([512.0, 2048, 100, 9000]))
    for i, t in enumerate(tokens):
        one = _llama_pass(float(t), prompts=float(t), attention_flops=float(t) * 1e9, context=[512.0, 2048, 100, 9000][i])
        assert many.memory_s[i] == pytest.approx(one.memory_s, rel=1e-12)
        assert many.compute_s[i] == pytest.approx(one.compute_s, rel=1e-12)
        assert many.latency_s[i] == pytest.approx(one.latency_s, rel=1e-12)


def test_the_hopper_fp8_fit_reproduces_deepgemm_within_its_stated_error() -> None:
    """Re-predict every DeepGEMM row from the fitted profile (rms log error as derive.py states it)."""
    prof = profile_for("h100-sxm")
    e = prof.gemm_efficiency_for("fp8")
    kh, nh = prof.half_widths("fp8")
    errors = []
    for r in load_kernel_data().gemm:
        if r.library != "deepgemm":
            continue
        groups = r.groups if r.grouped else 1
        flops = 2.0 * r.m * r.n * r.k * groups
        per_expert = r.m / (r.m + prof.gemm_half_m) if r.grouped else 1.0
        eff = e * min(r.m / prof.tile_m, 1.0) * per_expert * r.k / (r.k + kh) * r.n / (r.n + nh)
        t_comp = flops / (1978.9e12 * eff)
        t_mem = (r.m * r.k + r.k * r.n + 2.0 * r.m * r.n) * groups / (3350e9 * prof.bandwidth_efficiency)
        predicted = max(t_comp, t_mem) + prof.min_kernel_s
        errors.append(np.log(predicted / (flops / (r.tflops * 1e12))))
    assert len(errors) >= 25
    rms = float(np.sqrt(np.mean(np.square(errors))))
    assert rms < 0.12, rms
    assert max(abs(x) for x in errors) < 0.35


def test_profiles_are_what_the_kernel_data_give() -> None:
    """profiles.yaml is derive.py's output on the shipped data (regenerate with
    ``python -m workbench_performance.operators.derive --write``)."""
    assert derive.shipped_text() == derive.render(derive.derive())


def test_every_profile_figure_has_a_source_and_accelerators_map_once() -> None:
    seen: set[str] = set()
    for profile in all_profiles():
        assert set(profile.sources) >= {"gemm_efficiency", "bandwidth_efficiency", "attention_efficiency", "min_kernel_s"}
        assert not (seen & set(profile.gpus))
        seen |= set(profile.gpus)
    # measured architectures have their own profile; a part without any kernel data gets the generic one
    assert profile_for("h100-sxm").id == "hopper" and not profile_for("h100-sxm").generic
    assert profile_for("mi300x").id == "cdna3"
    assert profile_for("tpu-v5e").generic
    # an accelerator with its own GEMM measurement uses it (MAMF: MI300X below MI325X)
    assert profile_for("mi300x").gemm_efficiency_for("bf16") < profile_for("mi325x").gemm_efficiency_for("bf16")
