"""Buy versus rent: total cost of owning GPUs over ``years`` against renting the hours they work.

    capex        = GPUs x purchase price x (1 + server_overhead_fraction)
    hours        = years x 8,760;  useful hours = hours x utilization
    energy       = GPUs x (useful hours x busy facility power + idle hours x idle facility power)
    buy          = capex + energy x electricity price
    rent         = GPUs x useful hours x cloud price (you rent only the hours you use)
    owned $/GPU-h= buy / (GPUs x useful hours)   (straight-line depreciation of the capex over the period)
    break-even   = capex / (monthly rent - monthly power cost of owning), in months

Not included: staff, maintenance contracts, financing, resale value, networking beyond the
server overhead fraction, and cloud discounts (reserved or spot prices: enter them as the price).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0

#: A float, or a float64 array with one entry per point of a group (the GPU count and the busy
#: power vary with the batch: the performance plugin's GPUs and utilization).
Figure = Any


@dataclass(frozen=True, slots=True)
class BuyVsRent:
    """The comparison for one configuration (floats), or for each point of a group (arrays)."""

    capex_usd: Figure
    energy_kwh: Figure
    power_usd: Figure
    buy_usd: Figure
    rent_usd: Figure
    owned_usd_per_gpu_hour: Figure
    #: None: renting never costs more than the power of owning. Over a group: an object array of
    #: floats and None.
    break_even_months: Any
    cheaper: Any  # "buy" or "rent"; over a group, an object array of those strings


def buy_vs_rent(
    gpus: Figure,
    purchase_usd: float,
    server_overhead: float,
    cloud_usd_per_gpu_hour: float,
    years: float,
    utilization: float,
    busy_facility_w: Figure,
    idle_facility_w: float,
    usd_per_kwh: float,
) -> BuyVsRent:
    """Owning against renting. ``gpus`` and ``busy_facility_w`` may be arrays over a point group
    (then every figure is one); the arithmetic is the same expressions, in the same order, either way."""
    hours = years * HOURS_PER_YEAR
    useful = hours * utilization
    capex = gpus * purchase_usd * (1.0 + server_overhead)
    energy = gpus * (useful * busy_facility_w + (hours - useful) * idle_facility_w) / 1000.0
    power_usd = energy * usd_per_kwh
    buy = capex + power_usd
    rent = gpus * useful * cloud_usd_per_gpu_hour
    monthly_rent = rent / (years * 12.0)
    monthly_power = power_usd / (years * 12.0)
    margin = monthly_rent - monthly_power
    owned = buy / (gpus * useful)
    if not isinstance(margin, np.ndarray):
        break_even = capex / margin if margin > 0 else None
        return BuyVsRent(capex, energy, power_usd, buy, rent, owned, break_even, "buy" if buy < rent else "rent")
    pays = margin > 0
    with np.errstate(divide="ignore", invalid="ignore"):  # the points where it does not pay back are dropped
        months = (capex / margin).astype(object)
    if not pays.all():
        months[~pays] = None
    cheaper = np.where(buy < rent, "buy", "rent").astype(object)
    return BuyVsRent(capex, energy, power_usd, buy, rent, owned, months, cheaper)
