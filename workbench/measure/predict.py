"""What the estimate predicts for a measurement's metrics, with given assumption values.

A metric is compared with the simulated figure when the measurement states a request rate (the
estimate then simulates the server under that load) and with the closed-form figure otherwise
(a closed loop of ``concurrency`` users); percentiles are only compared where simulated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine
from workbench.measure.model import METRICS


def metric_key(metric: str, resolved: ResolvedScenario) -> str | None:
    """The estimate key one measured metric is compared with; None: not comparable here."""
    keys = METRICS[metric].keys
    simulated = resolved.scenario.serving.arrival_rate is not None
    if METRICS[metric].workload == "training":
        return keys[0]
    if simulated:
        return keys[0]
    closed = [k for k in keys if ".sim." not in k]
    return closed[0] if closed else None


def comparable(metrics: Mapping[str, float], resolved: ResolvedScenario) -> dict[str, str]:
    """metric -> estimate key for the measured metrics this scenario can predict."""
    return {m: key for m in metrics if (key := metric_key(m, resolved)) is not None}


def predict_points(engine: Engine, resolved: ResolvedScenario, keys: Mapping[str, str],
                   values: Mapping[str, Sequence[float]]) -> list[dict[str, float | None]]:
    """One prediction per point: ``values`` holds one value per point of each assumption."""
    wanted = tuple(sorted(set(keys.values())))
    count = len(next(iter(values.values()))) if values else 1
    if not values:
        estimate = engine.run(resolved, wanted)
        return [{m: _finite(estimate.get(k)) for m, k in keys.items()}]
    group = engine.run_points(resolved, None, wanted, {k: np.asarray(v, dtype=float) for k, v in values.items()})
    out = []
    for i in range(count):
        estimate = group.estimate(i)
        out.append({m: _finite(estimate.get(k)) for m, k in keys.items()})
    return out


def _finite(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return None
