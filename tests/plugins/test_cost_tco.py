"""Buy versus rent, by hand: capex with server overhead, straight-line depreciation, power at the
owned utilization, and the break-even month."""

from __future__ import annotations

import pytest
from workbench_cost import buy_vs_rent
from workbench_cost.power import facility_watts, gpu_watts


def test_eight_gpus_for_three_years() -> None:
    t = buy_vs_rent(
        gpus=8,
        purchase_usd=30000,
        server_overhead=0.5,
        cloud_usd_per_gpu_hour=2.5,
        years=3,
        utilization=0.7,
        busy_facility_w=1000,
        idle_facility_w=200,
        usd_per_kwh=0.1,
    )
    hours = 3 * 8760
    useful = 0.7 * hours
    assert t.capex_usd == pytest.approx(8 * 30000 * 1.5)
    assert t.energy_kwh == pytest.approx(8 * (useful * 1000 + (hours - useful) * 200) / 1000)
    assert t.buy_usd == pytest.approx(t.capex_usd + t.energy_kwh * 0.1)
    assert t.rent_usd == pytest.approx(8 * useful * 2.5)
    assert t.owned_usd_per_gpu_hour == pytest.approx(t.buy_usd / (8 * useful))
    monthly_rent = t.rent_usd / 36
    monthly_power = t.energy_kwh * 0.1 / 36
    assert t.break_even_months == pytest.approx(t.capex_usd / (monthly_rent - monthly_power))
    assert t.cheaper == ("buy" if t.buy_usd < t.rent_usd else "rent")


def test_cheap_rental_never_breaks_even() -> None:
    t = buy_vs_rent(
        gpus=1,
        purchase_usd=30000,
        server_overhead=0.5,
        cloud_usd_per_gpu_hour=0.05,
        years=3,
        utilization=0.5,
        busy_facility_w=1500,
        idle_facility_w=300,
        usd_per_kwh=0.2,
    )
    assert t.break_even_months is None
    assert t.cheaper == "rent"


def test_more_use_makes_owning_cheaper_per_hour() -> None:
    kw = {
        "gpus": 8,
        "purchase_usd": 30000,
        "server_overhead": 0.5,
        "cloud_usd_per_gpu_hour": 2.5,
        "years": 3,
        "busy_facility_w": 1000,
        "idle_facility_w": 200,
        "usd_per_kwh": 0.1,
    }
    assert (
        buy_vs_rent(utilization=0.9, **kw).owned_usd_per_gpu_hour
        < buy_vs_rent(utilization=0.3, **kw).owned_usd_per_gpu_hour
    )


def test_power_model() -> None:
    assert gpu_watts(700, 0.15, 0.0) == pytest.approx(105)
    assert gpu_watts(700, 0.15, 1.0) == pytest.approx(700)
    assert gpu_watts(700, 0.15, 2.0) == pytest.approx(700)  # utilization is clipped
    assert facility_watts(700, 0.5, 1.3) == pytest.approx(700 * 1.5 * 1.3)
