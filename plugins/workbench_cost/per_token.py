"""Per-token figures over a point group: $/million tokens (central, and at the optimistic and
pessimistic throughput), the price of prompt and of generated tokens, energy and CO2 per million.

Tokens are the performance plugin's: output tokens plus, when the model generates, the prompt
tokens processed; training tokens when training. A point without throughput has no per-token
figure ("no throughput"), as a single estimate of it says.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from workbench.engine.points import Column, col
from workbench_cost.basis import POWER_IDS, Basis, usd
from workbench_cost.columns import null, numbers, or_zero, pick, with_none
from workbench_cost.keys import label

PER_TOKEN_KEYS = (
    "cost.usd_per_million_tokens",
    "cost.usd_per_million_tokens_low",
    "cost.usd_per_million_tokens_high",
)
SPLIT_KEYS = ("cost.usd_per_million_input_tokens", "cost.usd_per_million_output_tokens")
ENERGY_PER_TOKEN_KEYS = ("cost.energy_kwh_per_million_tokens", "cost.co2_kg_per_million_tokens")
_NO_PRICE = "no rental price: set --usd-per-gpu-hour"
_NO_POWER = "no power figure for this accelerator"
_NO_RATE = "no throughput"


def add_per_token(b: Basis) -> None:
    want = b.ctx.wants
    wanted = [k for k in (*PER_TOKEN_KEYS, *SPLIT_KEYS, *ENERGY_PER_TOKEN_KEYS) if want(k)]
    if not wanted:
        return
    ctx = b.ctx
    out_rate = or_zero(numbers(ctx, "performance.tokens_per_s")[0])  # `rate or 0.0` serves every use
    if b.training:
        in_rate = share = np.zeros(ctx.n)
        generates = np.zeros(ctx.n, dtype=bool)
    else:
        in_rate = or_zero(numbers(ctx, "performance.input_tokens_per_s")[0])
        share = or_zero(numbers(ctx, "performance.prefill_time_fraction")[0])
        generates = ctx.points["gen_len"] != 0
    all_rate = out_rate + np.where(generates, in_rate, 0.0)
    rated = all_rate != 0.0
    if any(map(want, PER_TOKEN_KEYS)):
        _prices(b, out_rate, all_rate, rated, generates)
    if any(map(want, SPLIT_KEYS)):
        _split(b, out_rate, in_rate, share, generates)
    if any(map(want, ENERGY_PER_TOKEN_KEYS)):
        _energy(b, all_rate, rated, generates)


def _by_tokens(
    b: Basis, generates: np.ndarray, make: Callable[[str], Column]
) -> list[tuple[np.ndarray | None, Column]]:
    """The cases of a per-token key by what its tokens are (the label names them)."""
    if b.training:
        return [(None, make("training tokens"))]
    return [(generates, make("input + output tokens")), (None, make("input tokens"))]


def _prices(b: Basis, out_rate: np.ndarray, all_rate: np.ndarray, rated: np.ndarray, generates: np.ndarray) -> None:
    want, v, hourly = b.ctx.wants, b.values, b.hourly
    if hourly is None:
        for key in PER_TOKEN_KEYS:
            if want(key):
                v[key] = null(key, _NO_PRICE)
        return
    no_rate = ~rated
    with np.errstate(divide="ignore", invalid="ignore"):  # the points without throughput are dropped
        per_m = hourly / (all_rate * 3600.0) * 1e6
    key = "cost.usd_per_million_tokens"
    if want(key):
        values = with_none(per_m, rated)

        def central(what: str) -> Column:
            return col(
                values,
                "USD/Mtoken",
                f"Cost per million {what}",
                lambda i: f"{usd(hourly[i])}/h / ({all_rate[i]:,.0f} tokens/s x 3,600) x 1e6",
            )

        v[key] = pick(values, [(no_rate, null(key, _NO_RATE)), *_by_tokens(b, generates, central)])
    for key, rate_key in (
        ("cost.usd_per_million_tokens_low", "performance.tokens_per_s_high"),
        ("cost.usd_per_million_tokens_high", "performance.tokens_per_s_low"),
    ):
        if not want(key):
            continue
        rate = or_zero(numbers(b.ctx, rate_key)[0])
        # `all_rate * (rate / out_rate) if rate and out_rate else None`, then no value unless scaled
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = all_rate * (rate / out_rate)
            bound = hourly / (scaled * 3600.0) * 1e6
        has = rated & (rate != 0.0) & (out_rate != 0.0) & (scaled != 0.0)
        values = with_none(bound, has)
        v[key] = pick(
            values,
            [(no_rate, null(key, _NO_RATE)), (None, col(values, "USD/Mtoken", label(key), f"at {rate_key}"))],
        )


def _split(b: Basis, out_rate: np.ndarray, in_rate: np.ndarray, share: np.ndarray, generates: np.ndarray) -> None:
    want, v, hourly = b.ctx.wants, b.values, b.hourly
    keys = [k for k in SPLIT_KEYS if want(k)]
    if b.training or hourly is None:
        why = "training: tokens are not split" if b.training else _NO_PRICE
        for key in keys:
            v[key] = null(key, why)
        return
    split = generates & (out_rate != 0.0) & (in_rate != 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # the points that do not split are dropped
        per_in = hourly * share / (in_rate * 3600.0) * 1e6
        per_out = hourly * (1.0 - share) / (out_rate * 3600.0) * 1e6
    formulas: dict[str, Callable[[int], str]] = {
        "cost.usd_per_million_input_tokens": lambda i: (
            f"{usd(hourly[i])}/h x prompt share of GPU time {share[i]:.3f} / "
            f"({in_rate[i]:,.0f} input tokens/s x 3,600) x 1e6"
        ),
        "cost.usd_per_million_output_tokens": lambda i: (
            f"{usd(hourly[i])}/h x decode share {1 - share[i]:.3f} / "
            f"({out_rate[i]:,.0f} output tokens/s x 3,600) x 1e6"
        ),
    }
    figures = {"cost.usd_per_million_input_tokens": per_in, "cost.usd_per_million_output_tokens": per_out}
    for key in keys:
        values = with_none(figures[key], split)
        v[key] = pick(
            values,
            [
                (~split, null(key, "the model generates no tokens")),
                (None, col(values, "USD/Mtoken", label(key), formulas[key])),
            ],
        )


def _energy(b: Basis, all_rate: np.ndarray, rated: np.ndarray, generates: np.ndarray) -> None:
    want, v, power_kw = b.ctx.wants, b.values, b.power_kw
    if power_kw is None:
        for key in ENERGY_PER_TOKEN_KEYS:
            if want(key):
                v[key] = null(key, _NO_POWER)
        return
    no_rate = ~rated
    with np.errstate(divide="ignore", invalid="ignore"):  # the points without throughput are dropped
        kwh = power_kw / (all_rate * 3600.0) * 1e6
    grid = b.pricing.grid_kg_co2_per_kwh
    key = "cost.energy_kwh_per_million_tokens"
    if want(key):
        energy = with_none(kwh, rated)

        def per_m_energy(what: str) -> Column:
            return col(
                energy,
                "kWh/Mtoken",
                f"Energy per million {what}",
                lambda i: f"{power_kw[i]:.4g} kW / ({all_rate[i]:,.0f} tokens/s x 3,600) x 1e6",
                POWER_IDS,
            )

        v[key] = pick(energy, [(no_rate, null(key, _NO_RATE)), *_by_tokens(b, generates, per_m_energy)])
    key = "cost.co2_kg_per_million_tokens"
    if want(key):
        co2 = with_none(kwh * grid, rated)

        def per_m_co2(what: str) -> Column:
            return col(
                co2,
                "kg CO2e/Mtoken",
                f"CO2 per million {what}",
                lambda i: f"{kwh[i]:.4g} kWh x {grid:g} kg/kWh",
                POWER_IDS,
            )

        v[key] = pick(co2, [(no_rate, null(key, _NO_RATE)), *_by_tokens(b, generates, per_m_co2)])
