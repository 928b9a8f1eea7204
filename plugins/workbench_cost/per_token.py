"""Per-token figures over a point group: $/million tokens (central, and at the optimistic and
pessimistic throughput), the price of prompt and of generated tokens, energy and CO2 per million.

Tokens are the performance plugin's: output tokens plus, when the model generates, the prompt
tokens processed; training tokens when training. A point without throughput has no per-token
figure ("no throughput"), as a single estimate of it says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from workbench.engine.points import Column, at, col
from workbench_cost.basis import NO_POWER, NO_PRICE, POWER_IDS, Basis, put_nulls, usd
from workbench_cost.columns import (
    Case,
    Floats,
    Some,
    figure,
    known,
    negate,
    null,
    pick,
    point_field,
    some,
    where,
    with_none,
    zeros,
)
from workbench_cost.keys import label

PER_TOKEN_KEYS = (
    "cost.usd_per_million_tokens",
    "cost.usd_per_million_tokens_low",
    "cost.usd_per_million_tokens_high",
)
SPLIT_KEYS = ("cost.usd_per_million_input_tokens", "cost.usd_per_million_output_tokens")
ENERGY_PER_TOKEN_KEYS = ("cost.energy_kwh_per_million_tokens", "cost.co2_kg_per_million_tokens")
_NO_RATE = "no throughput"
#: What a per-token key's tokens are, as its label names them.
_TRAINING, _BOTH, _INPUT = "training tokens", "input + output tokens", "input tokens"


def add_per_token(b: Basis) -> None:
    want = b.want
    if not any(map(want, (*PER_TOKEN_KEYS, *SPLIT_KEYS, *ENERGY_PER_TOKEN_KEYS))):
        return
    ctx = b.ctx
    out_rate = figure(ctx, "performance.tokens_per_s")  # `rate or 0.0` serves every use
    generating: bool | np.ndarray
    if b.training:
        in_rate = share = zeros(ctx)
        generating = False if ctx.n == 1 else np.zeros(ctx.n, dtype=bool)
    else:
        in_rate = figure(ctx, "performance.input_tokens_per_s")
        share = figure(ctx, "performance.prefill_time_fraction")
        generating = point_field(ctx, "gen_len") != 0
    all_rate = out_rate + where(generating, in_rate, 0.0)
    rated = all_rate != 0.0
    generates = some(generating)
    what = (
        _TRAINING
        if b.training
        else (_BOTH if generates is True else (_INPUT if generates is False else None))
    )
    t = _Tokens(b, out_rate, in_rate, share, all_rate, rated, some(rated), generating, generates, what)
    if any(map(want, PER_TOKEN_KEYS)):
        _prices(t)
    if any(map(want, SPLIT_KEYS)):
        _split(t)
    if any(map(want, ENERGY_PER_TOKEN_KEYS)):
        _energy(t)


@dataclass(slots=True)
class _Tokens:
    """The group's token rates (``x or 0.0`` of the performance plugin's) and what they allow."""

    b: Basis
    out_rate: Floats
    in_rate: Floats
    share: Floats
    all_rate: Floats  # output tokens, plus the prompt's when the model generates
    rated: bool | np.ndarray  # where all_rate is not 0
    rated_some: Some
    generating: bool | np.ndarray
    generates: Some
    #: What every point's tokens are, None when that differs between points (some generate).
    what: str | None

    def by_tokens(self, key: str, values: Floats | None, make: Callable[[str], Column]) -> Column:
        """A per-token key: no value where there is no throughput, else ``make``'s part for what
        the point's tokens are (its label names them). A uniform group decides without cases."""
        rated, what = self.rated_some, self.what
        if rated is True and what is not None:
            return make(what)
        if rated is False:
            return null(key, _NO_RATE)
        unrated: Case = (negate(rated), lambda: null(key, _NO_RATE))
        if self.b.training:
            return pick(values, [unrated, (None, lambda: make(_TRAINING))])
        return pick(values, [unrated, (self.generates, lambda: make(_BOTH)), (None, lambda: make(_INPUT))])


def _prices(t: _Tokens) -> None:
    b = t.b
    want, v, hourly, all_rate = b.want, b.values, b.hourly, t.all_rate
    if hourly is None:
        put_nulls(b, PER_TOKEN_KEYS, NO_PRICE)
        return
    key = "cost.usd_per_million_tokens"
    if want(key):
        rated = t.rated_some
        values = None if rated is False else with_none(hourly / (all_rate * 3600.0) * 1e6, rated)

        def central(what: str) -> Column:
            return col(
                values,
                "USD/Mtoken",
                f"Cost per million {what}",
                lambda i: f"{usd(at(hourly, i))}/h / ({at(all_rate, i):,.0f} tokens/s x 3,600) x 1e6",
            )

        v[key] = t.by_tokens(key, values, central)
    for key, rate_key in (
        ("cost.usd_per_million_tokens_low", "performance.tokens_per_s_high"),
        ("cost.usd_per_million_tokens_high", "performance.tokens_per_s_low"),
    ):
        if want(key):
            rate = figure(b.ctx, rate_key)
            # `all_rate * (rate / out_rate) if rate and out_rate else None`, and no value unless scaled
            scales = t.rated & (rate != 0.0) & (t.out_rate != 0.0)
            values = None
            if some(scales) is not False:
                scaled = all_rate * (rate / t.out_rate)
                has = some(scales & (scaled != 0.0))
                if has is not False:
                    values = with_none(hourly / (scaled * 3600.0) * 1e6, has)
            v[key] = known(
                t.rated_some, key, _NO_RATE, col(values, "USD/Mtoken", label(key), f"at {rate_key}")
            )


def _split(t: _Tokens) -> None:
    b = t.b
    want, v, hourly = b.want, b.values, b.hourly
    if b.training or hourly is None:
        why = "training: tokens are not split" if b.training else NO_PRICE
        put_nulls(b, SPLIT_KEYS, why)
        return
    split = some(t.generating & (t.out_rate != 0.0) & (t.in_rate != 0.0))
    share, in_rate, out_rate = t.share, t.in_rate, t.out_rate
    key = "cost.usd_per_million_input_tokens"
    if want(key):
        per_in = None if split is False else with_none(hourly * share / (in_rate * 3600.0) * 1e6, split)
        v[key] = known(
            split,
            key,
            _NO_SPLIT,
            col(
                per_in,
                "USD/Mtoken",
                label("cost.usd_per_million_input_tokens"),
                lambda i: (
                    f"{usd(at(hourly, i))}/h x prompt share of GPU time {at(share, i):.3f} / "
                    f"({at(in_rate, i):,.0f} input tokens/s x 3,600) x 1e6"
                ),
            ),
        )
    key = "cost.usd_per_million_output_tokens"
    if want(key):
        per_out = (
            None if split is False else with_none(hourly * (1.0 - share) / (out_rate * 3600.0) * 1e6, split)
        )
        v[key] = known(
            split,
            key,
            _NO_SPLIT,
            col(
                per_out,
                "USD/Mtoken",
                label("cost.usd_per_million_output_tokens"),
                lambda i: (
                    f"{usd(at(hourly, i))}/h x decode share {1 - at(share, i):.3f} / "
                    f"({at(out_rate, i):,.0f} output tokens/s x 3,600) x 1e6"
                ),
            ),
        )


_NO_SPLIT = "the model generates no tokens"


def _energy(t: _Tokens) -> None:
    b = t.b
    want, v, power_kw, all_rate = b.want, b.values, b.power_kw, t.all_rate
    if power_kw is None:
        put_nulls(b, ENERGY_PER_TOKEN_KEYS, NO_POWER)
        return
    rated = t.rated_some
    kwh = None if rated is False else power_kw / (all_rate * 3600.0) * 1e6  # None: no point keeps it
    grid = b.pricing.grid_kg_co2_per_kwh
    key = "cost.energy_kwh_per_million_tokens"
    if want(key):
        energy = None if kwh is None else with_none(kwh, rated)

        def per_m_energy(what: str) -> Column:
            return col(
                energy,
                "kWh/Mtoken",
                f"Energy per million {what}",
                lambda i: f"{at(power_kw, i):.4g} kW / ({at(all_rate, i):,.0f} tokens/s x 3,600) x 1e6",
                POWER_IDS,
            )

        v[key] = t.by_tokens(key, energy, per_m_energy)
    key = "cost.co2_kg_per_million_tokens"
    if want(key):
        co2 = None if kwh is None else with_none(kwh * grid, rated)

        def per_m_co2(what: str) -> Column:
            return col(
                co2,
                "kg CO2e/Mtoken",
                f"CO2 per million {what}",
                lambda i: f"{at(kwh, i):.4g} kWh x {grid:g} kg/kWh",
                POWER_IDS,
            )

        v[key] = t.by_tokens(key, co2, per_m_co2)
