"""What a simulation reports: per-request timestamps and per-configuration summaries.

Percentiles use numpy's default (linear interpolation), per configuration along the request
axis. TPOT per request is (end-to-end - TTFT) / (output tokens - 1), the definition vLLM's and
MLPerf's benchmarks use; a request with one output token has none and is left out of TPOT
percentiles and counts as meeting a TPOT target.
"""

from __future__ import annotations

import warnings

from dataclasses import dataclass, fields

import numpy as np

PERCENTILES = (50, 90, 99)


def stack(results: list[SimulationResult]) -> SimulationResult:
    """Results of single configurations, one after another, as one result of many."""
    return SimulationResult(
        **{f.name: np.concatenate([getattr(r, f.name) for r in results]) for f in fields(SimulationResult)}
    )


@dataclass(frozen=True)
class SimulationResult:
    """C x R arrays (configuration, request) of times in seconds from t = 0, and C-arrays."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    max_gap_s: np.ndarray  # longest wait between two output tokens of a request (stalls)
    preemptions: np.ndarray  # times each request was preempted
    iterations: np.ndarray  # engine iterations per configuration
    time_in_system_s: np.ndarray  # integral over time of the requests in the system (per configuration)

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_token_s - self.arrival_s

    @property
    def e2e_s(self) -> np.ndarray:
        return self.finish_s - self.arrival_s

    @property
    def tpot_s(self) -> np.ndarray:
        steps = self.output_tokens - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(steps > 0, (self.e2e_s - self.ttft_s) / np.maximum(steps, 1), np.nan)

    def summary(self, slo_ttft_s: float = np.inf, slo_tpot_s: float = np.inf) -> dict[str, np.ndarray]:
        """Per configuration (arrays of C): percentiles, throughput, goodput, simulated time.

        duration_s runs from the first arrival to the last completion; throughput is measured over
        it (MLPerf's definition). mean_concurrency is the time average of the requests in the
        system, integrated by the loop from its own state (not from these timestamps), so
        Little's law (mean_concurrency = requests_per_s x mean e2e) checks the bookkeeping.
        """
        if not (slo_ttft_s > 0 and slo_tpot_s > 0):
            raise ValueError("SLO targets must be > 0 seconds")
        ttft, e2e, tpot = self.ttft_s, self.e2e_s, self.tpot_s
        out: dict[str, np.ndarray] = {}
        for name, x in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e), ("max_gap", self.max_gap_s)):
            # nanpercentile is much slower; only TPOT of one-token requests can be nan. A run whose
            # requests all have one output token has no TPOT at all: nan, which the keys report as
            # empty with the reason -- numpy's "empty slice" warnings would reach the user as noise.
            gaps = np.isnan(x).any()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                pct = (np.nanpercentile if gaps else np.percentile)(x, PERCENTILES, axis=1)
                mean = np.nanmean(x, axis=1) if gaps else x.mean(axis=1)
            for q, row in zip(PERCENTILES, pct, strict=True):
                out[f"{name}_p{q}_s"] = row
            out[f"{name}_mean_s"] = mean
        start = self.arrival_s.min(axis=1)
        end = self.finish_s.max(axis=1)
        duration = end - start
        n = self.arrival_s.shape[1]
        good = (ttft <= slo_ttft_s) & ~(tpot > slo_tpot_s)
        out.update(
            simulated_s=end,
            duration_s=duration,
            output_tokens_per_s=self.output_tokens.sum(axis=1) / duration,
            requests_per_s=n / duration,
            goodput_fraction=good.mean(axis=1),
            goodput_requests_per_s=good.sum(axis=1) / duration,
            mean_concurrency=self.time_in_system_s / duration,
            preemptions=self.preemptions.sum(axis=1),
            iterations=self.iterations,
        )
        return out
