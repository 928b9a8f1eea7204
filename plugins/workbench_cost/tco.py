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

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0


@dataclass(frozen=True, slots=True)
class BuyVsRent:
    capex_usd: float
    energy_kwh: float
    power_usd: float
    buy_usd: float
    rent_usd: float
    owned_usd_per_gpu_hour: float
    break_even_months: float | None  # None: renting never costs more than the power of owning
    cheaper: str


def buy_vs_rent(
    gpus: int,
    purchase_usd: float,
    server_overhead: float,
    cloud_usd_per_gpu_hour: float,
    years: float,
    utilization: float,
    busy_facility_w: float,
    idle_facility_w: float,
    usd_per_kwh: float,
) -> BuyVsRent:
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
    break_even = capex / margin if margin > 0 else None
    return BuyVsRent(
        capex,
        energy,
        power_usd,
        buy,
        rent,
        buy / (gpus * useful),
        break_even,
        "buy" if buy < rent else "rent",
    )
