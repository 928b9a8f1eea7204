"""First-party performance plugin: serving latency and throughput, training step time, communication.

Depends only on pluggy, :mod:`workbench.core` and :mod:`workbench.engine`; reads the compute
plugin's FLOP and roofline keys and the memory plugin's KV-cache keys. Result keys are listed in
:mod:`workbench_performance.keys` (and docs/validation.md).

The throughput-latency curve is not a result key (it is not a scalar). The GUI and CLI call::

    from workbench_performance import curve_for
    points = curve_for(estimate, [1, 2, 4, 8, 16, 32, 64, 128])
    [(p.batch, p.ttft_s, p.tpot_s, p.tokens_per_s, p.fits) for p in points]

which rebuilds the batch-independent inputs once from a finished estimate and evaluates the
serving model at each concurrency (plain arithmetic, ~10 us per point). The per-operator
breakdown of a step (which kernels, how long, what bounds each) is :func:`kernels_for`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from workbench_performance.breakdown import Kernel, Phase, kernels_for
from workbench_performance.efficiency import ASSUMPTIONS, Efficiency, efficiencies
from workbench_performance.estimator import CommunicationEstimator, PerformanceEstimator
from workbench_performance.inference import (
    InferenceInputs,
    ServePoint,
    accepted_per_step,
    serve,
    throughput_latency_curve,
)
from workbench_performance.inputs import Source, inference_inputs, training_inputs
from workbench_performance.training import TrainingInputs, TrainStep, bubble_fraction, train_step

__version__ = "1.0.0"

hookimpl = pluggy.HookimplMarker("workbench")


@hookimpl
def workbench_register_estimators(register: Callable[[Any], None]) -> None:
    register(CommunicationEstimator())
    register(PerformanceEstimator())


def curve_for(estimate: Any, batches: Iterable[int]) -> list[ServePoint]:
    """Throughput-latency curve of an inference estimate (or estimator context) over ``batches``.

    Uses the scenario's own efficiency assumptions (overrides included); every other setting
    (prompt and output length, parallel layout, serving options) is the scenario's.
    """
    src = Source.of(estimate)
    central, _, _ = efficiencies(src.assumptions, training=False, mfu=src.scenario.mfu)
    return throughput_latency_curve(inference_inputs(src), batches, central)


__all__ = [
    "ASSUMPTIONS",
    "CommunicationEstimator",
    "Efficiency",
    "InferenceInputs",
    "Kernel",
    "Phase",
    "PerformanceEstimator",
    "ServePoint",
    "TrainStep",
    "TrainingInputs",
    "__version__",
    "accepted_per_step",
    "bubble_fraction",
    "curve_for",
    "efficiencies",
    "inference_inputs",
    "kernels_for",
    "serve",
    "throughput_latency_curve",
    "train_step",
    "training_inputs",
    "workbench_register_estimators",
]
