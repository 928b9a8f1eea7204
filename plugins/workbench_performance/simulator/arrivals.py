"""Request streams: Offline, Poisson (MLPerf Server), gamma, closed loop and traces.

Each function returns a :class:`Workload` of plain arrays. Random draws come from the numpy
Generator passed in, so a seed reproduces a run. Where a rate is given per configuration the
same unit draws are scaled by each rate ("common random numbers"): configurations compared at
different loads see the same burst pattern, which keeps the comparison about the load.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench_performance.simulator.inputs import Workload


def _n(n: int) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"the number of requests must be a whole number >= 1, got {n!r}")
    return int(n)


def _rate(rate: Any) -> np.ndarray:
    arr = np.asarray(rate, dtype=np.float64)
    if arr.ndim > 1 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(
            f"the arrival rate must be > 0 requests/s (one value or one per configuration), got {rate!r}"
        )
    return arr


def _scaled(unit_gaps: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Arrival times from unit-mean gaps: (R,) for one rate, (C, R) for a rate per configuration."""
    times = np.cumsum(unit_gaps)
    return times / rate if rate.ndim == 0 else times[None, :] / rate[:, None]


def lengths(
    rng: np.random.Generator, n: int, mean: float, cv: float = 0.0, low: int = 1, high: int | None = None
) -> np.ndarray:
    """n token counts with a given mean and coefficient of variation (gamma-distributed, rounded).

    cv = 0 gives n copies of the mean. Real prompt/output length distributions are skewed with a
    long tail; a gamma with the measured mean and CV is the simplest shape that has one.
    """
    n = _n(n)
    if not mean >= 1 or not cv >= 0:
        raise ValueError(f"lengths need mean >= 1 and cv >= 0, got mean={mean!r}, cv={cv!r}")
    if cv == 0:
        out = np.full(n, round(mean), dtype=np.int64)
    else:
        shape = 1.0 / cv**2
        out = np.rint(rng.gamma(shape, mean / shape, size=n)).astype(np.int64)
    return np.clip(out, low, high if high is not None else np.iinfo(np.int64).max)


def offline(prompt_tokens: Any, output_tokens: Any) -> Workload:
    """MLPerf Offline: every request is there at t = 0."""
    prompt = np.asarray(prompt_tokens)
    return Workload(prompt, output_tokens, arrival_s=np.zeros(prompt.shape[-1]))


def poisson(rng: np.random.Generator, rate: Any, prompt_tokens: Any, output_tokens: Any) -> Workload:
    """MLPerf Server: Poisson arrivals at ``rate`` requests/s (exponential gaps)."""
    r = _rate(rate)
    n = _n(np.asarray(prompt_tokens).shape[-1])
    return Workload(prompt_tokens, output_tokens, arrival_s=_scaled(rng.exponential(1.0, size=n), r))


def gamma(rng: np.random.Generator, rate: Any, cv: float, prompt_tokens: Any, output_tokens: Any) -> Workload:
    """Gamma-distributed gaps at ``rate`` requests/s with coefficient of variation ``cv``.

    cv = 1 is Poisson; cv > 1 is burstier (the shape vLLM's benchmark calls "burstiness" = 1/cv^2).
    """
    r = _rate(rate)
    if not (np.isfinite(cv) and cv > 0):
        raise ValueError(f"the coefficient of variation must be > 0, got {cv!r}")
    n = _n(np.asarray(prompt_tokens).shape[-1])
    shape = 1.0 / cv**2
    return Workload(prompt_tokens, output_tokens, arrival_s=_scaled(rng.gamma(shape, 1.0 / shape, size=n), r))


def closed_loop(users: Any, prompt_tokens: Any, output_tokens: Any) -> Workload:
    """Fixed concurrency: ``users`` requests in flight; each completion sends the next one."""
    return Workload(prompt_tokens, output_tokens, users=users)


def trace(arrival_s: Any, prompt_tokens: Any, output_tokens: Any) -> Workload:
    """A recorded trace: arrival times (s, non-decreasing), prompt and output lengths."""
    return Workload(prompt_tokens, output_tokens, arrival_s=arrival_s)
