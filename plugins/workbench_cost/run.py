"""A training run over a point group (rented cost, GPU-hours, energy, CO2, cost on owned GPUs) and
buy-vs-rent.

A run has a length where the performance plugin gives a time to train (training with
``train_tokens``); elsewhere its keys have no value and say why. Buy-vs-rent needs both prices and
the accelerator's power figure; it varies between points through the GPUs and their utilization.
"""

from __future__ import annotations

import numpy as np

from workbench.engine.points import Column, PointWarning, col
from workbench_cost.basis import POWER_IDS, Basis, usd
from workbench_cost.columns import null, numbers, or_zero, pick, with_none
from workbench_cost.keys import label
from workbench_cost.tco import HOURS_PER_YEAR, buy_vs_rent

RUN_KEYS = (
    "cost.total_usd",
    "cost.total_usd_low",
    "cost.total_usd_high",
    "cost.gpu_hours",
    "cost.energy_kwh",
    "cost.co2_kg",
    "cost.run_owned_usd",
)
TCO_KEYS = (
    "cost.tco.capex_usd",
    "cost.tco.buy_usd",
    "cost.tco.rent_usd",
    "cost.tco.owned_usd_per_gpu_hour",
    "cost.tco.break_even_months",
    "cost.tco.cheaper",
    "cost.run_owned_usd",
)
_NO_PRICE = "no rental price: set --usd-per-gpu-hour"
_NO_POWER = "no power figure for this accelerator"
_OWNED = "cost.run_owned_usd"


def add_run_and_tco(b: Basis) -> None:
    want = b.ctx.wants
    run_wanted = any(map(want, RUN_KEYS))
    tco_wanted = any(map(want, TCO_KEYS))
    if not (run_wanted or tco_wanted):
        return
    if b.training:
        seconds, timed = numbers(b.ctx, "performance.train_time_s")
    else:
        seconds, timed = np.zeros(b.ctx.n), np.zeros(b.ctx.n, dtype=bool)
    why = "set --train-tokens to cost a run" if b.training else "no run length: inference scenario"
    # The keys come in the order a single estimate gives them: with a run length, the GPU-hours
    # first and the cost on owned GPUs after buy-vs-rent; without, the order of RUN_KEYS.
    if run_wanted:
        _run(b, seconds, timed, why)
    if tco_wanted:
        _tco(b, seconds, timed, why)


def _run(b: Basis, seconds: np.ndarray, timed: np.ndarray, why: str) -> None:
    want, v, gpus = b.ctx.wants, b.values, b.gpus
    if not timed.any():
        for key in RUN_KEYS:
            if want(key):
                v[key] = null(key, why)
        return
    untimed = ~timed
    hours = seconds / 3600.0
    if want("cost.gpu_hours"):
        gpu_hours = with_none(gpus * hours, timed)
        v["cost.gpu_hours"] = pick(
            gpu_hours,
            [
                (untimed, null("cost.gpu_hours", why)),
                (
                    None,
                    col(gpu_hours, "GPU-h", "GPU-hours of the run", lambda i: f"{b.gpus_at(i)} GPUs x {hours[i]:,.1f} h"),
                ),
            ],
        )
    hourly = b.hourly
    for key, days_key, what in (
        ("cost.total_usd", None, ""),
        ("cost.total_usd_low", "performance.train_time_days_low", "optimistic "),
        ("cost.total_usd_high", "performance.train_time_days_high", "pessimistic "),
    ):
        if not want(key):
            continue
        if hourly is None:
            rented: Column = null(key, _NO_PRICE)
            values = None
        else:
            run_h = hours if days_key is None else or_zero(numbers(b.ctx, days_key)[0]) * 24.0
            total = hourly * run_h
            values = with_none(total, timed)
            rented = col(values, "USD", label(key), _run_formula(b, what, run_h, total))
        v[key] = pick(values, [(untimed, null(key, why)), (None, rented)])
    power_kw = b.power_kw
    kwh = None if power_kw is None else power_kw * hours
    grid = b.pricing.grid_kg_co2_per_kwh
    for key in ("cost.energy_kwh", "cost.co2_kg"):
        if not want(key):
            continue
        if kwh is None:
            made: Column = null(key, _NO_POWER)
            values = None
        elif key == "cost.energy_kwh":
            values = with_none(kwh, timed)
            made = col(
                values,
                "kWh",
                "Energy of the run (facility)",
                lambda i: f"{power_kw[i]:.4g} kW x {hours[i]:,.1f} h",
                POWER_IDS,
            )
        else:
            values = with_none(kwh * grid, timed)
            made = col(
                values, "kg CO2e", "CO2 of the run", lambda i: f"{kwh[i]:,.0f} kWh x {grid:g} kg/kWh", POWER_IDS
            )
        v[key] = pick(values, [(untimed, null(key, why)), (None, made)])


def _run_formula(b: Basis, what: str, hours: np.ndarray, total: np.ndarray):  # type: ignore[no-untyped-def]
    price = b.price
    return lambda i: f"{what}{b.gpus_at(i)} GPUs x {usd(price)} x {hours[i]:,.1f} h = {usd(total[i])}"


def _tco(b: Basis, seconds: np.ndarray, timed: np.ndarray, why: str) -> None:
    want, v, gpus, pricing = b.ctx.wants, b.values, b.gpus, b.pricing
    purchase, price, overhead = b.purchase, b.price, pricing.server_overhead_fraction
    keys = [k for k in TCO_KEYS[:-1] if want(k)]
    if purchase is None or price is None or b.busy_w is None or b.idle_w is None:
        missing = (
            "purchase price (--purchase-usd)"
            if purchase is None
            else ("rental price (--usd-per-gpu-hour)" if price is None else "power figure of the accelerator")
        )
        for key in keys:
            v[key] = null(key, f"needs the {missing}")
        if purchase is not None and want("cost.tco.capex_usd"):
            v["cost.tco.capex_usd"] = col(
                gpus * purchase * (1.0 + overhead),
                "USD",
                label("cost.tco.capex_usd"),
                lambda i: f"{b.gpus_at(i)} x {usd(purchase)} x (1 + {overhead:g})",
            )
        if want(_OWNED) and timed.any():
            v[_OWNED] = pick(None, [(~timed, null(_OWNED, why)), (None, null(_OWNED, f"needs the {missing}"))])
        return
    years, use = pricing.years, pricing.utilization
    t = buy_vs_rent(gpus, purchase, overhead, price, years, use, b.busy_w, b.idle_w, pricing.power_usd_per_kwh)
    made = {
        "cost.tco.capex_usd": lambda: col(
            t.capex_usd,
            "USD",
            label("cost.tco.capex_usd"),
            lambda i: (
                f"{b.gpus_at(i)} GPUs x {usd(purchase)} ({b.purchase_from}) x (1 + server "
                f"overhead {overhead:g})"
            ),
        ),
        "cost.tco.buy_usd": lambda: col(
            t.buy_usd,
            "USD",
            label("cost.tco.buy_usd"),
            lambda i: (
                f"capex {usd(t.capex_usd[i])} + {t.energy_kwh[i]:,.0f} kWh x "
                f"{usd(pricing.power_usd_per_kwh)} over {years:g} years at {use:.0%} "
                f"use = {usd(t.buy_usd[i])}"
            ),
            POWER_IDS,
        ),
        "cost.tco.rent_usd": lambda: col(
            t.rent_usd,
            "USD",
            label("cost.tco.rent_usd"),
            lambda i: (
                f"{b.gpus_at(i)} GPUs x {years:g} x {HOURS_PER_YEAR:,.0f} h x {use:.0%} use x "
                f"{usd(price)} = {usd(t.rent_usd[i])}"
            ),
        ),
        "cost.tco.owned_usd_per_gpu_hour": lambda: col(
            t.owned_usd_per_gpu_hour,
            "USD/GPU-h",
            label("cost.tco.owned_usd_per_gpu_hour"),
            lambda i: f"{usd(t.buy_usd[i])} / ({b.gpus_at(i)} GPUs x useful hours)",
            POWER_IDS,
        ),
        "cost.tco.break_even_months": lambda: col(
            t.break_even_months,
            "months",
            label("cost.tco.break_even_months"),
            lambda i: (
                f"capex {usd(t.capex_usd[i])} / (monthly rent {usd(t.rent_usd[i] / years / 12)} "
                f"- monthly power {usd(t.power_usd[i] / years / 12)})"
                if t.break_even_months[i] is not None
                else "renting costs less per month than powering owned GPUs: never"
            ),
            POWER_IDS,
        ),
        "cost.tco.cheaper": lambda: col(
            t.cheaper,
            "",
            label("cost.tco.cheaper"),
            lambda i: f"buy {usd(t.buy_usd[i])} vs rent {usd(t.rent_usd[i])} over {years:g} years",
        ),
    }
    for key in keys:
        v[key] = made[key]()
    if want(_OWNED) and timed.any():
        owned = with_none(t.owned_usd_per_gpu_hour * gpus * seconds / 3600.0, timed)
        on_owned = col(
            owned,
            "USD",
            label(_OWNED),
            lambda i: f"{gpus[i] * seconds[i] / 3600:,.0f} GPU-h x owned {usd(t.owned_usd_per_gpu_hour[i])}/GPU-h",
            POWER_IDS,
        )
        v[_OWNED] = pick(owned, [(~timed, null(_OWNED, why)), (None, on_owned)])
    months = t.break_even_months
    late = np.fromiter((m is not None and m > years * 12 for m in months.tolist()), dtype=bool, count=len(months))
    if late.any():
        b.warnings.append(
            PointWarning(
                "buy-does-not-pay-back",
                lambda i: (
                    f"Buying pays back after {months[i]:.0f} months, beyond the {years:g}-year period at {use:.0%} use"
                ),
                severity="info",
                where=late,
            )
        )
