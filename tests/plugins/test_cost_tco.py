"""Buy versus rent, by hand: capex with server overhead, straight-line depreciation, power at the
owned utilization, and the break-even month."""

from __future__ import annotations

import numpy as np
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


def test_over_a_point_group_each_point_is_the_single_figure() -> None:
    """GPUs and busy power vary between the points of a group: arrays in, per point exactly what
    the same call with that point's floats gives (no break-even as None, the cheaper side as text)."""
    gpus = np.array([1.0, 8.0, 8.0, 64.0])
    busy = np.array([1500.0, 1000.0, 400.0, 2500.0])
    kw = {"purchase_usd": 30000.0, "server_overhead": 0.5, "cloud_usd_per_gpu_hour": 0.3, "years": 3.0,
          "utilization": 0.7, "idle_facility_w": 300.0, "usd_per_kwh": 0.2}  # fmt: skip
    group = buy_vs_rent(gpus=gpus, busy_facility_w=busy, **kw)
    breaks = []
    for i in range(len(gpus)):
        alone = buy_vs_rent(gpus=int(gpus[i]), busy_facility_w=float(busy[i]), **kw)
        for name in ("capex_usd", "energy_kwh", "power_usd", "buy_usd", "rent_usd", "owned_usd_per_gpu_hour"):
            assert getattr(group, name)[i] == getattr(alone, name), name
        assert group.break_even_months[i] == alone.break_even_months
        assert type(group.break_even_months[i]) is type(alone.break_even_months)
        assert group.cheaper[i] == alone.cheaper and type(group.cheaper[i]) is str
        breaks.append(alone.break_even_months)
    assert None in breaks and any(b is not None for b in breaks)  # both kinds of point


def test_power_model_over_a_group() -> None:
    utilization = np.array([-0.5, 0.0, 0.3, 1.0, 2.0, np.nan])
    got = gpu_watts(700, 0.15, utilization)
    for u, w in zip(utilization.tolist(), got.tolist()):
        want = gpu_watts(700, 0.15, u)
        assert w == want or (w != w and want != want)
    assert facility_watts(got[:5], 0.5, 1.3).tolist() == [facility_watts(w, 0.5, 1.3) for w in got[:5].tolist()]
