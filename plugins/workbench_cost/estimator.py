"""The cost estimator: $/hour, $/million tokens, $ and GPU-hours of a run, energy, CO2, buy vs rent.

Prices: ``scenario.pricing`` first, else the accelerator catalog's typical figures
(``cloud_usd_per_hour``, ``list_price_usd``). A price known to neither leaves the keys that need
it at None, with a warning naming the flag to set. Tokens are the performance plugin's; GPUs are
the scenario's (idle ones are paid for too) or more when a disaggregated prefill pool is added.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import FixedQuantity, Outputs, Quantity, Warning, q
from workbench_cost import power as W
from workbench_cost.keys import COST, label, unit
from workbench_cost.tco import HOURS_PER_YEAR, buy_vs_rent

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


def _num(ctx: EstimateContext, key: str) -> float | None:
    quantity = ctx.values.get(key)
    if quantity is None:  # a run for a few keys, none of which reads this one (see NEEDS_BY_KEY)
        return None
    value = quantity.value
    if type(value) is float:  # the usual case, decided without the isinstance chain
        return value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@lru_cache(maxsize=1024)
def _null(key: str, why: str) -> Quantity:
    """``key`` with no value and the reason; the same few reasons recur, so each is built once and
    shared (read-only :class:`~workbench.engine.quantity.FixedQuantity`, formula = the reason)."""
    return FixedQuantity(None, unit(key), label(key), why, note=why)


def _run_formula(what: str, gpus: int, price: float | None, hours: float, total: float) -> Callable[[], str]:
    return lambda: f"{what}{gpus} GPUs x {_usd(price)} x {hours:,.1f} h = {_usd(total)}"


def _text(text: str) -> Callable[[], str]:
    return lambda: text


def _usd(x: float | None) -> str:
    return "n/a" if x is None else f"${x:,.2f}"


def _always(key: str) -> bool:
    return True


# The same accelerators lack the same prices in estimate after estimate: each warning is built
# once per accelerator name (warnings are frozen, so one object serves every estimate).
@lru_cache(maxsize=256)
def _price_unknown(name: str) -> Warning:
    return Warning(
        "price-unknown",
        f"No rental price for {name}: hourly and per-token costs are not estimated",
        fix="enter the price per GPU-hour with --usd-per-gpu-hour (scenario.pricing.cloud_usd_per_gpu_hour)",
    )


@lru_cache(maxsize=256)
def _purchase_price_unknown(name: str) -> Warning:
    return Warning(
        "purchase-price-unknown",
        f"No purchase price for {name}: buy-vs-rent is not estimated",
        fix="enter the price per GPU with --purchase-usd (scenario.pricing.purchase_usd_per_gpu)",
    )


# Keys by the section of the estimate that computes them: a run for a few keys skips the rest.
_PER_TOKEN_KEYS = (
    "cost.usd_per_million_tokens",
    "cost.usd_per_million_tokens_low",
    "cost.usd_per_million_tokens_high",
)
_SPLIT_KEYS = ("cost.usd_per_million_input_tokens", "cost.usd_per_million_output_tokens")
_ENERGY_PER_TOKEN_KEYS = ("cost.energy_kwh_per_million_tokens", "cost.co2_kg_per_million_tokens")
_RUN_KEYS = (
    "cost.total_usd",
    "cost.total_usd_low",
    "cost.total_usd_high",
    "cost.gpu_hours",
    "cost.energy_kwh",
    "cost.co2_kg",
    "cost.run_owned_usd",
)
_TCO_KEYS = (
    "cost.tco.capex_usd",
    "cost.tco.buy_usd",
    "cost.tco.rent_usd",
    "cost.tco.owned_usd_per_gpu_hour",
    "cost.tco.break_even_months",
    "cost.tco.cheaper",
    "cost.run_owned_usd",
)
_NEEDS_POWER = (
    "cost.power_kw",
    "cost.energy_usd_per_hour",
    *_ENERGY_PER_TOKEN_KEYS,
    "cost.energy_kwh",
    "cost.co2_kg",
    *_TCO_KEYS,
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
    **{key: (_GPUS, _UTIL, *_RUN) for key in _RUN_KEYS},
    **{key: (_GPUS, _UTIL, *_RUN) for key in _TCO_KEYS},
}


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

    def estimate(self, ctx: EstimateContext) -> Outputs:
        sc, gpu = ctx.scenario, ctx.gpu
        pricing = sc.pricing
        v: dict[str, Quantity] = {}
        warnings: list[Warning] = []
        training = sc.is_training
        gpus = max(int(_num(ctx, "performance.gpus") or 0), sc.num_gpus)
        util = _num(ctx, "performance.gpu_utilization") or 0.0

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

        # A run for a few keys (a sweep) computes only the sections those keys come from.
        want = _always if ctx.wanted is None else ctx.wanted.__contains__
        power_ids = (W.IDLE, W.HOST)
        tdp = gpu.tdp_watts
        busy_w = idle_w = idle = host = None
        # --- power ----------------------------------------------------------------------------
        if any(map(want, _NEEDS_POWER)):
            idle = ctx.assumptions[W.IDLE]
            host = ctx.assumptions[W.HOST]
            if tdp is None:
                warnings.append(
                    Warning(
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
        if want("cost.usd_per_gpu_hour"):
            v["cost.usd_per_gpu_hour"] = (
                q(price, "USD/GPU-h", "Rental price per GPU-hour", lambda: f"{_usd(price)} ({price_from})")
                if price is not None
                else _null("cost.usd_per_gpu_hour", "no rental price: set --usd-per-gpu-hour")
            )
        if want("cost.usd_per_hour"):
            v["cost.usd_per_hour"] = (
                q(hourly, "USD/h", "Rental cost per hour", lambda: f"{gpus} GPUs x {_usd(price)}")
                if hourly is not None
                else _null("cost.usd_per_hour", "no rental price: set --usd-per-gpu-hour")
            )
        power_kw = None if busy_w is None else gpus * busy_w / 1000.0
        if want("cost.power_kw"):
            v["cost.power_kw"] = (
                q(
                    power_kw,
                    "kW",
                    "Facility power while working",
                    lambda: (
                        f"{gpus} GPUs x TDP {tdp:g} W x ({idle:g} + (1 - {idle:g}) x utilization "
                        f"{util:.3g}) x (1 + host {host:g}) x PUE {pricing.pue:g}"
                    ),
                    power_ids,
                )
                if power_kw is not None
                else _null("cost.power_kw", "no power figure for this accelerator")
            )
        if want("cost.energy_usd_per_hour"):
            v["cost.energy_usd_per_hour"] = (
                q(
                    power_kw * pricing.power_usd_per_kwh,
                    "USD/h",
                    "Electricity per hour",
                    lambda: f"{power_kw:.4g} kW x {_usd(pricing.power_usd_per_kwh)}/kWh",
                    power_ids,
                )
                if power_kw is not None
                else _null("cost.energy_usd_per_hour", "no power figure for this accelerator")
            )

        # --- per token ------------------------------------------------------------------------
        out_rate = _num(ctx, "performance.tokens_per_s")
        in_rate = 0.0 if training else (_num(ctx, "performance.input_tokens_per_s") or 0.0)
        share = 0.0 if training else (_num(ctx, "performance.prefill_time_fraction") or 0.0)
        generates = bool(sc.gen_len) and not training
        all_rate = (out_rate or 0.0) + (in_rate if generates else 0.0)
        self._per_token(
            v,
            hourly,
            power_kw,
            pricing.grid_kg_co2_per_kwh,
            out_rate,
            in_rate,
            all_rate,
            share,
            generates,
            training,
            ctx,
            power_ids,
            want,
        )

        # --- a training run -------------------------------------------------------------------
        seconds = _num(ctx, "performance.train_time_s") if training else None
        if not any(map(want, _RUN_KEYS)):
            pass
        elif seconds is None:
            why = "no run length: inference scenario" if not training else "set --train-tokens to cost a run"
            for key in (
                "cost.total_usd",
                "cost.total_usd_low",
                "cost.total_usd_high",
                "cost.gpu_hours",
                "cost.energy_kwh",
                "cost.co2_kg",
                "cost.run_owned_usd",
            ):
                if want(key):
                    v[key] = _null(key, why)
        else:
            hours = seconds / 3600.0
            gpu_hours = gpus * hours
            if want("cost.gpu_hours"):
                v["cost.gpu_hours"] = q(
                    gpu_hours, "GPU-h", "GPU-hours of the run", lambda: f"{gpus} GPUs x {hours:,.1f} h"
                )
            for key, days_key, what in (
                ("cost.total_usd", None, ""),
                ("cost.total_usd_low", "performance.train_time_days_low", "optimistic "),
                ("cost.total_usd_high", "performance.train_time_days_high", "pessimistic "),
            ):
                if not want(key):
                    continue
                run_h = hours if days_key is None else (_num(ctx, days_key) or 0.0) * 24.0
                if hourly is None:
                    v[key] = _null(key, "no rental price: set --usd-per-gpu-hour")
                else:
                    total = hourly * run_h
                    v[key] = q(
                        total,
                        "USD",
                        label(key),
                        _run_formula(what, gpus, price, run_h, total),
                    )
            if power_kw is None:
                if want("cost.energy_kwh"):
                    v["cost.energy_kwh"] = _null("cost.energy_kwh", "no power figure for this accelerator")
                if want("cost.co2_kg"):
                    v["cost.co2_kg"] = _null("cost.co2_kg", "no power figure for this accelerator")
            else:
                kwh = power_kw * hours
                if want("cost.energy_kwh"):
                    v["cost.energy_kwh"] = q(
                        kwh,
                        "kWh",
                        "Energy of the run (facility)",
                        lambda: f"{power_kw:.4g} kW x {hours:,.1f} h",
                        power_ids,
                    )
                if want("cost.co2_kg"):
                    v["cost.co2_kg"] = q(
                        kwh * pricing.grid_kg_co2_per_kwh,
                        "kg CO2e",
                        "CO2 of the run",
                        lambda: f"{kwh:,.0f} kWh x {pricing.grid_kg_co2_per_kwh:g} kg/kWh",
                        power_ids,
                    )

        # --- buy vs rent ----------------------------------------------------------------------
        tco_keys = (
            "cost.tco.capex_usd",
            "cost.tco.buy_usd",
            "cost.tco.rent_usd",
            "cost.tco.owned_usd_per_gpu_hour",
            "cost.tco.break_even_months",
            "cost.tco.cheaper",
        )
        if not any(map(want, _TCO_KEYS)):
            pass
        elif purchase is None or price is None or busy_w is None or idle_w is None:
            missing = (
                "purchase price (--purchase-usd)"
                if purchase is None
                else (
                    "rental price (--usd-per-gpu-hour)"
                    if price is None
                    else "power figure of the accelerator"
                )
            )
            for key in tco_keys:
                if want(key):
                    v[key] = _null(key, f"needs the {missing}")
            if purchase is not None:
                capex = gpus * purchase * (1.0 + pricing.server_overhead_fraction)
                if want("cost.tco.capex_usd"):
                    v["cost.tco.capex_usd"] = q(
                        capex,
                        "USD",
                        label("cost.tco.capex_usd"),
                        lambda: f"{gpus} x {_usd(purchase)} x (1 + {pricing.server_overhead_fraction:g})",
                    )
            if training and seconds is not None:
                if want("cost.run_owned_usd"):
                    v["cost.run_owned_usd"] = _null("cost.run_owned_usd", f"needs the {missing}")
        else:
            t = buy_vs_rent(
                gpus,
                purchase,
                pricing.server_overhead_fraction,
                price,
                pricing.years,
                pricing.utilization,
                busy_w,
                idle_w,
                pricing.power_usd_per_kwh,
            )
            years, use = pricing.years, pricing.utilization
            if want("cost.tco.capex_usd"):
                v["cost.tco.capex_usd"] = q(
                    t.capex_usd,
                    "USD",
                    label("cost.tco.capex_usd"),
                    lambda: (
                        f"{gpus} GPUs x {_usd(purchase)} ({purchase_from}) x (1 + server "
                        f"overhead {pricing.server_overhead_fraction:g})"
                    ),
                )
            if want("cost.tco.buy_usd"):
                v["cost.tco.buy_usd"] = q(
                    t.buy_usd,
                    "USD",
                    label("cost.tco.buy_usd"),
                    lambda: (
                        f"capex {_usd(t.capex_usd)} + {t.energy_kwh:,.0f} kWh x "
                        f"{_usd(pricing.power_usd_per_kwh)} over {years:g} years at {use:.0%} "
                        f"use = {_usd(t.buy_usd)}"
                    ),
                    power_ids,
                )
            if want("cost.tco.rent_usd"):
                v["cost.tco.rent_usd"] = q(
                    t.rent_usd,
                    "USD",
                    label("cost.tco.rent_usd"),
                    lambda: (
                        f"{gpus} GPUs x {years:g} x {HOURS_PER_YEAR:,.0f} h x {use:.0%} use x "
                        f"{_usd(price)} = {_usd(t.rent_usd)}"
                    ),
                )
            if want("cost.tco.owned_usd_per_gpu_hour"):
                v["cost.tco.owned_usd_per_gpu_hour"] = q(
                    t.owned_usd_per_gpu_hour,
                    "USD/GPU-h",
                    label("cost.tco.owned_usd_per_gpu_hour"),
                    lambda: f"{_usd(t.buy_usd)} / ({gpus} GPUs x useful hours)",
                    power_ids,
                )
            if want("cost.tco.break_even_months"):
                v["cost.tco.break_even_months"] = q(
                    t.break_even_months,
                    "months",
                    label("cost.tco.break_even_months"),
                    lambda: (
                        f"capex {_usd(t.capex_usd)} / (monthly rent {_usd(t.rent_usd / years / 12)} "
                        "- monthly power "
                        f"{_usd(t.power_usd / years / 12)})"
                        if t.break_even_months is not None
                        else "renting costs less per month than powering owned GPUs: never"
                    ),
                    power_ids,
                )
            if want("cost.tco.cheaper"):
                v["cost.tco.cheaper"] = q(
                    t.cheaper,
                    "",
                    label("cost.tco.cheaper"),
                    lambda: f"buy {_usd(t.buy_usd)} vs rent {_usd(t.rent_usd)} over {years:g} years",
                )
            if training and seconds is not None:
                owned = t.owned_usd_per_gpu_hour * gpus * seconds / 3600.0
                if want("cost.run_owned_usd"):
                    v["cost.run_owned_usd"] = q(
                        owned,
                        "USD",
                        label("cost.run_owned_usd"),
                        lambda: (
                            f"{gpus * seconds / 3600:,.0f} GPU-h x owned {_usd(t.owned_usd_per_gpu_hour)}/GPU-h"
                        ),
                        power_ids,
                    )
            if t.break_even_months is not None and t.break_even_months > years * 12:
                warnings.append(
                    Warning(
                        "buy-does-not-pay-back",
                        f"Buying pays back after {t.break_even_months:.0f} months, beyond the "
                        f"{years:g}-year period at "
                        f"{use:.0%} use",
                        severity="info",
                    )
                )
        return Outputs(v, warnings)

    @staticmethod
    def _per_token(
        v: dict[str, Quantity],
        hourly: float | None,
        power_kw: float | None,
        grid: float,
        out_rate: float | None,
        in_rate: float,
        all_rate: float,
        share: float,
        generates: bool,
        training: bool,
        ctx: EstimateContext,
        power_ids: tuple[str, ...],
        want: Callable[[str], bool],
    ) -> None:
        what = "training tokens" if training else ("input + output tokens" if generates else "input tokens")
        if not any(map(want, _PER_TOKEN_KEYS)):
            pass
        elif hourly is None or not all_rate:
            why = "no rental price: set --usd-per-gpu-hour" if hourly is None else "no throughput"
            for key in _PER_TOKEN_KEYS:
                if want(key):
                    v[key] = _null(key, why)
        else:
            per_m = hourly / (all_rate * 3600.0) * 1e6
            if want("cost.usd_per_million_tokens"):
                v["cost.usd_per_million_tokens"] = q(
                    per_m,
                    "USD/Mtoken",
                    f"Cost per million {what}",
                    lambda: f"{_usd(hourly)}/h / ({all_rate:,.0f} tokens/s x 3,600) x 1e6",
                )
            for key, rate_key in (
                ("cost.usd_per_million_tokens_low", "performance.tokens_per_s_high"),
                ("cost.usd_per_million_tokens_high", "performance.tokens_per_s_low"),
            ):
                if not want(key):
                    continue
                rate = _num(ctx, rate_key)
                scaled = all_rate * (rate / out_rate) if rate and out_rate else None
                v[key] = q(
                    hourly / (scaled * 3600.0) * 1e6 if scaled else None,
                    "USD/Mtoken",
                    label(key),
                    _text(f"at {rate_key}"),
                )
        if not any(map(want, _SPLIT_KEYS)):
            pass
        elif training or not generates or hourly is None or not out_rate or not in_rate:
            why = (
                "training: tokens are not split"
                if training
                else (
                    "no rental price: set --usd-per-gpu-hour"
                    if hourly is None
                    else "the model generates no tokens"
                )
            )
            if want("cost.usd_per_million_input_tokens"):
                v["cost.usd_per_million_input_tokens"] = _null("cost.usd_per_million_input_tokens", why)
            if want("cost.usd_per_million_output_tokens"):
                v["cost.usd_per_million_output_tokens"] = _null("cost.usd_per_million_output_tokens", why)
        else:
            per_in = hourly * share / (in_rate * 3600.0) * 1e6
            per_out = hourly * (1.0 - share) / (out_rate * 3600.0) * 1e6
            if want("cost.usd_per_million_input_tokens"):
                v["cost.usd_per_million_input_tokens"] = q(
                    per_in,
                    "USD/Mtoken",
                    label("cost.usd_per_million_input_tokens"),
                    lambda: (
                        f"{_usd(hourly)}/h x prompt share of GPU time {share:.3f} / "
                        f"({in_rate:,.0f} input tokens/s x "
                        "3,600) x 1e6"
                    ),
                )
            if want("cost.usd_per_million_output_tokens"):
                v["cost.usd_per_million_output_tokens"] = q(
                    per_out,
                    "USD/Mtoken",
                    label("cost.usd_per_million_output_tokens"),
                    lambda: (
                        f"{_usd(hourly)}/h x decode share {1 - share:.3f} / "
                        f"({out_rate:,.0f} output tokens/s x 3,600) x 1e6"
                    ),
                )
        if not any(map(want, _ENERGY_PER_TOKEN_KEYS)):
            pass
        elif power_kw is None or not all_rate:
            if want("cost.energy_kwh_per_million_tokens"):
                v["cost.energy_kwh_per_million_tokens"] = _null(
                    "cost.energy_kwh_per_million_tokens",
                    "no power figure for this accelerator" if power_kw is None else "no throughput",
                )
            if want("cost.co2_kg_per_million_tokens"):
                v["cost.co2_kg_per_million_tokens"] = _null(
                    "cost.co2_kg_per_million_tokens",
                    "no power figure for this accelerator" if power_kw is None else "no throughput",
                )
        else:
            kwh = power_kw / (all_rate * 3600.0) * 1e6
            if want("cost.energy_kwh_per_million_tokens"):
                v["cost.energy_kwh_per_million_tokens"] = q(
                    kwh,
                    "kWh/Mtoken",
                    f"Energy per million {what}",
                    lambda: f"{power_kw:.4g} kW / ({all_rate:,.0f} tokens/s x 3,600) x 1e6",
                    power_ids,
                )
            if want("cost.co2_kg_per_million_tokens"):
                v["cost.co2_kg_per_million_tokens"] = q(
                    kwh * grid,
                    "kg CO2e/Mtoken",
                    f"CO2 per million {what}",
                    lambda: f"{kwh:.4g} kWh x {grid:g} kg/kWh",
                    power_ids,
                )
