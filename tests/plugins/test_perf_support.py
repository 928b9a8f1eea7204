"""Stand-ins for the memory and compute plugins, so the performance and cost tests do not depend on
them: textbook FLOPs and bytes of a dense decoder (2 FLOPs per weight and token, 4 x layers x heads x
head_dim per attended (query, key) pair, weights read once per pass, the KV cache read per decode
step). Other test modules import :func:`engine_with`; the tests here check the stand-in itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from engine_fixtures import resolved
from workbench_performance import CommunicationEstimator, PerformanceEstimator
from workbench_performance.estimator import NEEDS

from workbench.core.dtypes import weight_bits
from workbench.core.scenario import Recompute
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Outputs, q

UPSTREAM_KEYS = NEEDS + ("flops.training_step",)


@dataclass(frozen=True)
class Textbook:
    """Whole-model figures of a dense decoder, from its shape."""

    matmul: float  # weight elements tokens multiply
    head: float  # output-head elements
    attention: float  # FLOPs per (query, key) pair, all layers
    kv_token: float  # KV-cache bytes per token, all layers


def textbook(ctx: EstimateContext) -> Textbook:
    m, sc = ctx.model, ctx.scenario
    q_width, kv_width = m.num_attention_heads * m.head_dim, m.num_kv_heads * m.head_dim
    per_layer = (
        2 * m.hidden_size * q_width + 2 * m.hidden_size * kv_width + 3 * m.hidden_size * m.intermediate_size
    )
    head = float(m.vocab_size * m.hidden_size)
    return Textbook(
        matmul=m.num_layers * per_layer + head,
        head=head,
        attention=4.0 * m.num_layers * m.num_attention_heads * m.head_dim,
        kv_token=2.0 * m.num_layers * kv_width * sc.kv_cache_dtype.bytes,
    )


class Upstream:
    """Produces every key the performance estimators need, as the real plugins name them."""

    def __init__(self, max_concurrency: float | None = 64.0) -> None:
        self.info = EstimatorInfo(
            id="fake-upstream", title="textbook FLOPs and bytes", version="1", produces=UPSTREAM_KEYS
        )
        self.max_concurrency = max_concurrency

    def estimate(self, ctx: EstimateContext) -> Outputs:
        sc, gpu = ctx.scenario, ctx.gpu
        t = textbook(ctx)
        split = sc.parallel.tp * sc.parallel.pp
        b, s, g = sc.batch_size, sc.seq_len, sc.gen_len
        context = s + 0.5 * g
        weights = t.matmul * weight_bits(sc.weight_format, sc.quant_group_size) / 8 / split
        forward = b * s * 2 * t.matmul + b * t.attention * s * s
        prefill = b * (s * 2 * (t.matmul - t.head) + 2 * t.head) + b * t.attention * s * s
        decode = b * (2 * t.matmul + t.attention * context)
        training = sc.is_training
        recompute = {Recompute.FULL: forward, Recompute.SELECTIVE: b * t.attention * s * s}.get(
            sc.recompute, 0.0
        )
        values = {
            "flops.forward": forward,
            "flops.per_token_forward": forward / (b * s),
            "flops.prefill": prefill,
            "flops.decode_step": decode,
            "flops.backward": 2 * forward if training else None,
            "flops.recompute": recompute if training else None,
            "flops.training_step": (3 * forward + recompute) if training else None,
            "roofline.decode.flops": decode / split,
            "roofline.decode.bytes": weights + b * context * t.kv_token / split,
            "roofline.prefill.flops": prefill / split,
            "roofline.prefill.bytes": weights + b * s * t.kv_token / split,
            "roofline.peak_tflops": gpu.dense_tflops[sc.dtype],
            "roofline.bandwidth_gbps": gpu.memory_bandwidth_gbps,
            "roofline.compute_dtype": sc.dtype.value,
            "kv_cache.bytes_per_token": t.kv_token,
            "kv_cache.max_concurrency": None if training else self.max_concurrency,
        }
        return Outputs({key: q(value, "", key) for key, value in values.items()})


def engine_with(*estimators: object, max_concurrency: float | None = 64.0) -> Engine:
    """Fake upstream + the performance plugin's estimators + ``estimators``."""
    return Engine([Upstream(max_concurrency), CommunicationEstimator(), PerformanceEstimator(), *estimators])


def test_stand_in_flops_match_the_6n_rule() -> None:
    """Training FLOPs per token of the stand-in are 6 x matmul weights + attention (PaLM, app. B)."""
    est = engine_with().run(resolved(workload="pretrain", seq_len=512))
    per_token = 3 * est.get("flops.forward") / 512
    assert per_token > 6 * 7.5e9
    assert est.get("performance.step_time_s") > 0


def test_stand_in_weights_are_what_a_decode_step_reads() -> None:
    est = engine_with().run(resolved(batch_size=1, seq_len=1, gen_len=0))
    weights = est.get("roofline.decode.bytes") - 1 * est.get("kv_cache.bytes_per_token")
    # Llama-3.1-8B: 8.03B parameters of which 0.525B are the input embedding (not a matmul)
    assert weights == pytest.approx((8.030e9 - 0.525e9) * 2, rel=0.002)
