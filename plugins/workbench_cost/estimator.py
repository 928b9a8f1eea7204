"""The cost estimator: $/hour, $/million tokens, $ and GPU-hours of a run, energy, CO2, buy vs rent.

Prices: ``scenario.pricing`` first, else the accelerator catalog's typical figures
(``cloud_usd_per_hour``, ``list_price_usd``). A price known to neither leaves the keys that need
it at None, with a warning naming the flag to set. Tokens are the performance plugin's; GPUs are
the scenario's (idle ones are paid for too) or more when a disaggregated prefill pool is added.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import Column, PointOutputs, PointsContext, PointWarning, at, col
from workbench_cost import power as W
from workbench_cost.basis import NO_POWER, NO_PRICE, POWER_IDS, Basis, usd, wanted
from workbench_cost.columns import Floats, figure, null
from workbench_cost.keys import COST
from workbench_cost.per_token import ENERGY_PER_TOKEN_KEYS, add_per_token
from workbench_cost.run import RUN_KEYS, TCO_KEYS, add_run_and_tco

VERSION = "1.0.0"

NEEDS = (
    "performance.tokens_per_s",
    "performance.tokens_per_s_low",
    "performance.tokens_per_s_high",
    "performance.input_tokens_per_s",
    "performance.prefill_time_fraction",
    "performance.train_time_s",
    "performance.train_time_days_low",
    "performance.train_time_days_high",
    "performance.gpu_utilization",
    "performance.gpus",
)


# The same accelerators lack the same prices in estimate after estimate: each warning is built
# once per accelerator name (warnings are frozen, so one object serves every group).
@lru_cache(maxsize=256)
def _price_unknown(name: str) -> PointWarning:
    return PointWarning(
        "price-unknown",
        f"No rental price for {name}: hourly and per-token costs are not estimated",
        fix="enter the price per GPU-hour with --usd-per-gpu-hour (scenario.pricing.cloud_usd_per_gpu_hour)",
    )


@lru_cache(maxsize=256)
def _purchase_price_unknown(name: str) -> PointWarning:
    return PointWarning(
        "purchase-price-unknown",
        f"No purchase price for {name}: buy-vs-rent is not estimated",
        fix="enter the price per GPU with --purchase-usd (scenario.pricing.purchase_usd_per_gpu)",
    )


# The price is the same in estimate after estimate, and its column holds nothing per point (one
# value, final text): each is built once per price and source (typed: 2 and 2.0 differ in type).
@lru_cache(maxsize=256, typed=True)
def _price_column(price: float, price_from: str) -> Column:
    return col(price, "USD/GPU-h", "Rental price per GPU-hour", f"{usd(price)} ({price_from})")


_NEEDS_POWER = (
    "cost.power_kw",
    "cost.energy_usd_per_hour",
    *ENERGY_PER_TOKEN_KEYS,
    "cost.energy_kwh",
    "cost.co2_kg",
    *TCO_KEYS,
)


_GPUS, _UTIL = "performance.gpus", "performance.gpu_utilization"
_RATES = ("performance.tokens_per_s", "performance.input_tokens_per_s")
_RUN = ("performance.train_time_s", "performance.train_time_days_low", "performance.train_time_days_high")
#: What each key is computed from (the engine's ``needs_by_key``): a sweep's cost column asks the
#: performance estimator for its throughput alone, not for the bounds other cost keys read.
NEEDS_BY_KEY: dict[str, tuple[str, ...]] = {
    "cost.usd_per_gpu_hour": (),
    "cost.usd_per_hour": (_GPUS,),
    "cost.power_kw": (_GPUS, _UTIL),
    "cost.energy_usd_per_hour": (_GPUS, _UTIL),
    "cost.usd_per_million_tokens": (_GPUS, *_RATES),
    "cost.usd_per_million_tokens_low": (_GPUS, *_RATES, "performance.tokens_per_s_high"),
    "cost.usd_per_million_tokens_high": (_GPUS, *_RATES, "performance.tokens_per_s_low"),
    "cost.usd_per_million_input_tokens": (_GPUS, *_RATES, "performance.prefill_time_fraction"),
    "cost.usd_per_million_output_tokens": (_GPUS, *_RATES, "performance.prefill_time_fraction"),
    "cost.energy_kwh_per_million_tokens": (_GPUS, _UTIL, *_RATES),
    "cost.co2_kg_per_million_tokens": (_GPUS, _UTIL, *_RATES),
    **{key: (_GPUS, _UTIL, *_RUN) for key in RUN_KEYS},
    **{key: (_GPUS, _UTIL, *_RUN) for key in TCO_KEYS},
}


def _gpus(ctx: PointsContext, num_gpus: int) -> Floats:
    """``max(int(performance.gpus or 0), num_gpus)`` per point, as whole numbers in float64."""
    values = figure(ctx, _GPUS)
    if not isinstance(values, np.ndarray):  # a group of one point
        return max(float(int(values)), float(num_gpus))  # int() raises on NaN or infinity
    finite = np.isfinite(values)
    if not finite.all():
        int(float(values[~finite][0]))  # raises what int() raises on NaN or infinity, as before
    return np.maximum(np.trunc(values), float(num_gpus))


class CostEstimator:
    needs_by_key = NEEDS_BY_KEY
    info = EstimatorInfo(
        id="cost",
        title="Cost, energy and buy vs rent",
        version=VERSION,
        produces=tuple(COST),
        needs=NEEDS,
        assumptions=W.ASSUMPTIONS,
        description="Rental $/hour and $/million tokens (input and output separately), $ and GPU-hours of a "
        "training run, energy (kWh) and CO2 at the estimated utilization, and buy-vs-rent TCO with "
        "break-even.",
    )

    def takes_assumption_arrays(self, scenario: object) -> bool:
        """The power fractions drawn per point (a Monte Carlo sample) are plain arithmetic here."""
        return True

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        if ctx.n == 1:
            # A group of one point (a single estimate): the same formulas over Python floats, with
            # no numpy call to silence and no division where nothing is kept.
            return self._estimate(ctx)
        # Divisions are computed at every point and the points where they mean nothing (no
        # throughput, no run) are dropped afterwards; elsewhere numpy gives what Python's floats
        # give (inf on overflow, never an exception), so its warnings are noise.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self._estimate(ctx)

    def _estimate(self, ctx: PointsContext) -> PointOutputs:
        sc, gpu = ctx.scenario, ctx.gpu
        pricing = sc.pricing
        want = wanted(ctx)
        warnings: list[PointWarning] = []
        gpus = _gpus(ctx, sc.num_gpus)
        util = figure(ctx, _UTIL)

        # --- prices ---------------------------------------------------------------------------
        price, price_from = pricing.cloud_usd_per_gpu_hour, "scenario pricing"
        if price is None and gpu.cloud_usd_per_hour is not None:
            price, price_from = gpu.cloud_usd_per_hour, "catalog typical on-demand price"
        purchase, purchase_from = pricing.purchase_usd_per_gpu, "scenario pricing"
        if purchase is None and gpu.list_price_usd is not None:
            purchase, purchase_from = gpu.list_price_usd, "catalog list price"
        if price is None:
            warnings.append(_price_unknown(gpu.name))
        if purchase is None:
            warnings.append(_purchase_price_unknown(gpu.name))

        # --- power (only for the keys that need it: a sweep's cost column does not) ----------------
        tdp = gpu.tdp_watts
        busy_w = idle_w = idle = host = None
        if any(map(want, _NEEDS_POWER)):
            idle = ctx.assumptions[W.IDLE]
            host = ctx.assumptions[W.HOST]
            if tdp is None:
                warnings.append(
                    PointWarning(
                        "power-unknown",
                        f"{gpu.name} has no published power figure: energy, CO2 and the power cost of "
                        "owning are not estimated",
                        fix="add tdp_watts to a custom accelerator entry",
                    )
                )
            else:
                busy_w = W.facility_watts(W.gpu_watts(tdp, idle, util), host, pricing.pue)
                idle_w = W.facility_watts(W.gpu_watts(tdp, idle, 0.0), host, pricing.pue)
        hourly = None if price is None else gpus * price
        power_kw = None if busy_w is None else gpus * busy_w / 1000.0
        b = Basis(ctx, pricing, sc.is_training, gpus, price, purchase, purchase_from, hourly, power_kw,
                  busy_w, idle_w, want, warnings=warnings)  # fmt: skip
        v = b.values

        if want("cost.usd_per_gpu_hour"):
            v["cost.usd_per_gpu_hour"] = (
                _price_column(price, price_from)
                if price is not None
                else null("cost.usd_per_gpu_hour", NO_PRICE)
            )
        if want("cost.usd_per_hour"):
            v["cost.usd_per_hour"] = (
                col(
                    hourly,
                    "USD/h",
                    "Rental cost per hour",
                    lambda i: f"{int(at(gpus, i))} GPUs x {usd(price)}",
                )
                if hourly is not None
                else null("cost.usd_per_hour", NO_PRICE)
            )
        if want("cost.power_kw"):
            v["cost.power_kw"] = (
                col(
                    power_kw,
                    "kW",
                    "Facility power while working",
                    lambda i: (
                        f"{int(at(gpus, i))} GPUs x TDP {tdp:g} W x ({at(idle, i):g} + (1 - {at(idle, i):g}) x "
                        f"utilization {at(util, i):.3g}) x (1 + host {at(host, i):g}) x PUE {pricing.pue:g}"
                    ),
                    POWER_IDS,
                )
                if power_kw is not None
                else null("cost.power_kw", NO_POWER)
            )
        if want("cost.energy_usd_per_hour"):
            v["cost.energy_usd_per_hour"] = (
                col(
                    power_kw * pricing.power_usd_per_kwh,
                    "USD/h",
                    "Electricity per hour",
                    lambda i: f"{at(power_kw, i):.4g} kW x {usd(pricing.power_usd_per_kwh)}/kWh",
                    POWER_IDS,
                )
                if power_kw is not None
                else null("cost.energy_usd_per_hour", NO_POWER)
            )
        add_per_token(b)
        add_run_and_tco(b)
        return PointOutputs(v, warnings)
