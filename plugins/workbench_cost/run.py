"""A training run over a point group (rented cost, GPU-hours, energy, CO2, cost on owned GPUs) and
buy-vs-rent.

A run has a length where the performance plugin gives a time to train (training with
``train_tokens``); elsewhere its keys have no value and say why. Buy-vs-rent needs both prices and
the accelerator's power figure; it varies between points through the GPUs and their utilization.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.engine.points import Column, PointWarning, at, col
from workbench_cost.basis import NO_POWER, NO_PRICE, POWER_IDS, Basis, put_nulls, usd
from workbench_cost.columns import Floats, Some, figure, known, null, numbers, with_none, zeros
from workbench_cost.keys import label
from workbench_cost.tco import HOURS_PER_YEAR, BuyVsRent, buy_vs_rent

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
_OWNED = "cost.run_owned_usd"


def add_run_and_tco(b: Basis) -> None:
    want = b.want
    run_wanted = any(map(want, RUN_KEYS))
    tco_wanted = any(map(want, TCO_KEYS))
    if not (run_wanted or tco_wanted):
        return
    if b.training:
        seconds, timed = numbers(b.ctx, "performance.train_time_s")
    else:
        seconds, timed = zeros(b.ctx), False
    run = _Run(
        b,
        seconds,
        timed,
        "set --train-tokens to cost a run" if b.training else "no run length: inference scenario",
    )
    # The keys come in the order a single estimate gives them: with a run length, the GPU-hours
    # first and the cost on owned GPUs after buy-vs-rent; without, the order of RUN_KEYS.
    if run_wanted:
        _run(run)
    if tco_wanted:
        _tco(run)


class _Run:
    """The run's length over the group: seconds (0.0 where none) and where there is one."""

    __slots__ = ("b", "seconds", "timed", "why")

    def __init__(self, b: Basis, seconds: Floats, timed: Some, why: str) -> None:
        self.b, self.seconds, self.timed, self.why = b, seconds, timed, why

    def known(self, key: str, column: Column) -> Column:
        """``column`` where there is a run length; elsewhere ``key`` has no value ("why")."""
        timed = self.timed
        return column if timed is True else known(timed, key, self.why, column)


def _run(r: _Run) -> None:
    b = r.b
    want, v, gpus, timed = b.want, b.values, b.gpus, r.timed
    if timed is False:
        put_nulls(b, RUN_KEYS, r.why)
        return
    hours = r.seconds / 3600.0
    if want("cost.gpu_hours"):
        gpu_hours = with_none(gpus * hours, timed)
        v["cost.gpu_hours"] = r.known(
            "cost.gpu_hours",
            col(
                gpu_hours,
                "GPU-h",
                "GPU-hours of the run",
                lambda i: f"{int(at(gpus, i))} GPUs x {at(hours, i):,.1f} h",
            ),
        )
    for key, days_key, what in (
        ("cost.total_usd", None, ""),
        ("cost.total_usd_low", "performance.train_time_days_low", "optimistic "),
        ("cost.total_usd_high", "performance.train_time_days_high", "pessimistic "),
    ):
        if not want(key):
            continue
        if b.hourly is None:
            v[key] = r.known(key, null(key, NO_PRICE))
            continue
        run_h = hours if days_key is None else figure(b.ctx, days_key) * 24.0
        total = b.hourly * run_h
        values = with_none(total, timed)
        v[key] = r.known(key, _rented(b, key, values, what, run_h, total))
    power_kw = b.power_kw
    kwh = None if power_kw is None else power_kw * hours
    grid = b.pricing.grid_kg_co2_per_kwh
    if want("cost.energy_kwh"):
        if kwh is None:
            v["cost.energy_kwh"] = r.known("cost.energy_kwh", null("cost.energy_kwh", NO_POWER))
        else:
            energy = with_none(kwh, timed)
            v["cost.energy_kwh"] = r.known(
                "cost.energy_kwh",
                col(
                    energy,
                    "kWh",
                    "Energy of the run (facility)",
                    lambda i: f"{at(power_kw, i):.4g} kW x {at(hours, i):,.1f} h",
                    POWER_IDS,
                ),
            )
    if want("cost.co2_kg"):
        if kwh is None:
            v["cost.co2_kg"] = r.known("cost.co2_kg", null("cost.co2_kg", NO_POWER))
        else:
            co2 = with_none(kwh * grid, timed)
            v["cost.co2_kg"] = r.known(
                "cost.co2_kg",
                col(
                    co2,
                    "kg CO2e",
                    "CO2 of the run",
                    lambda i: f"{at(kwh, i):,.0f} kWh x {grid:g} kg/kWh",
                    POWER_IDS,
                ),
            )


def _rented(b: Basis, key: str, values: Any, what: str, hours: Floats, total: Floats) -> Column:
    price, gpus = b.price, b.gpus
    return col(
        values,
        "USD",
        label(key),
        lambda i: (
            f"{what}{int(at(gpus, i))} GPUs x {usd(price)} x {at(hours, i):,.1f} h = {usd(at(total, i))}"
        ),
    )


def _tco(r: _Run) -> None:
    b = r.b
    want, v, gpus, pricing = b.want, b.values, b.gpus, b.pricing
    purchase, price, overhead = b.purchase, b.price, pricing.server_overhead_fraction
    owned_wanted = want(_OWNED) and r.timed is not False  # else the run's own null stands
    if purchase is None or price is None or b.busy_w is None or b.idle_w is None:
        missing = (
            "purchase price (--purchase-usd)"
            if purchase is None
            else ("rental price (--usd-per-gpu-hour)" if price is None else "power figure of the accelerator")
        )
        put_nulls(b, TCO_KEYS[:-1], f"needs the {missing}")
        if purchase is not None and want("cost.tco.capex_usd"):
            v["cost.tco.capex_usd"] = col(
                gpus * purchase * (1.0 + overhead),
                "USD",
                label("cost.tco.capex_usd"),
                lambda i: f"{int(at(gpus, i))} x {usd(purchase)} x (1 + {overhead:g})",
            )
        if owned_wanted:
            v[_OWNED] = r.known(_OWNED, null(_OWNED, f"needs the {missing}"))
        return
    t = buy_vs_rent(
        gpus, purchase, overhead, price, pricing.years, pricing.utilization, b.busy_w, b.idle_w,
        pricing.power_usd_per_kwh,
    )  # fmt: skip
    _add_tco(b, t)
    if owned_wanted:
        seconds = r.seconds
        owned = with_none(t.owned_usd_per_gpu_hour * gpus * seconds / 3600.0, r.timed)
        v[_OWNED] = r.known(
            _OWNED,
            col(
                owned,
                "USD",
                label(_OWNED),
                lambda i: (
                    f"{at(gpus, i) * at(seconds, i) / 3600:,.0f} GPU-h x owned "
                    f"{usd(at(t.owned_usd_per_gpu_hour, i))}/GPU-h"
                ),
                POWER_IDS,
            ),
        )
    years, use = pricing.years, pricing.utilization
    months = t.break_even_months
    late: bool | np.ndarray
    if isinstance(months, np.ndarray):
        late = np.fromiter(
            (m is not None and m > years * 12 for m in months.tolist()), dtype=bool, count=len(months)
        )
    else:  # a group of one point
        late = months is not None and months > years * 12
    if late is True or (late is not False and late.any()):
        b.warnings.append(
            PointWarning(
                "buy-does-not-pay-back",
                lambda i: (
                    f"Buying pays back after {at(months, i):.0f} months, beyond the {years:g}-year period "
                    f"at {use:.0%} use"
                ),
                severity="info",
                where=None if late is True else late,
            )
        )


def _add_tco(b: Basis, t: BuyVsRent) -> None:
    """The buy-vs-rent keys wanted, in the order of TCO_KEYS."""
    # The formulas close over plain values, never over ``b``: it holds the columns, and a cycle
    # would leave every estimate to the cyclic garbage collector.
    want, v = b.want, b.values
    pricing, price, purchase, purchase_from, gpus = b.pricing, b.price, b.purchase, b.purchase_from, b.gpus
    overhead, years, use = pricing.server_overhead_fraction, pricing.years, pricing.utilization
    if want("cost.tco.capex_usd"):
        v["cost.tco.capex_usd"] = col(
            t.capex_usd,
            "USD",
            label("cost.tco.capex_usd"),
            lambda i: (
                f"{int(at(gpus, i))} GPUs x {usd(purchase)} ({purchase_from}) x (1 + server "
                f"overhead {overhead:g})"
            ),
        )
    if want("cost.tco.buy_usd"):
        v["cost.tco.buy_usd"] = col(
            t.buy_usd,
            "USD",
            label("cost.tco.buy_usd"),
            lambda i: (
                f"capex {usd(at(t.capex_usd, i))} + {at(t.energy_kwh, i):,.0f} kWh x "
                f"{usd(pricing.power_usd_per_kwh)} over {years:g} years at {use:.0%} "
                f"use = {usd(at(t.buy_usd, i))}"
            ),
            POWER_IDS,
        )
    if want("cost.tco.rent_usd"):
        v["cost.tco.rent_usd"] = col(
            t.rent_usd,
            "USD",
            label("cost.tco.rent_usd"),
            lambda i: (
                f"{int(at(gpus, i))} GPUs x {years:g} x {HOURS_PER_YEAR:,.0f} h x {use:.0%} use x "
                f"{usd(price)} = {usd(at(t.rent_usd, i))}"
            ),
        )
    if want("cost.tco.owned_usd_per_gpu_hour"):
        v["cost.tco.owned_usd_per_gpu_hour"] = col(
            t.owned_usd_per_gpu_hour,
            "USD/GPU-h",
            label("cost.tco.owned_usd_per_gpu_hour"),
            lambda i: f"{usd(at(t.buy_usd, i))} / ({int(at(gpus, i))} GPUs x useful hours)",
            POWER_IDS,
        )
    if want("cost.tco.break_even_months"):
        v["cost.tco.break_even_months"] = col(
            t.break_even_months,
            "months",
            label("cost.tco.break_even_months"),
            lambda i: (
                f"capex {usd(at(t.capex_usd, i))} / (monthly rent {usd(at(t.rent_usd, i) / years / 12)} "
                f"- monthly power {usd(at(t.power_usd, i) / years / 12)})"
                if at(t.break_even_months, i) is not None
                else "renting costs less per month than powering owned GPUs: never"
            ),
            POWER_IDS,
        )
    if want("cost.tco.cheaper"):
        v["cost.tco.cheaper"] = col(
            t.cheaper,
            "",
            label("cost.tco.cheaper"),
            lambda i: f"buy {usd(at(t.buy_usd, i))} vs rent {usd(at(t.rent_usd, i))} over {years:g} years",
        )
