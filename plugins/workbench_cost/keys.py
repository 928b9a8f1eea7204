"""Result keys of the cost plugin with their units and meaning (the documented contract)."""

from __future__ import annotations

#: key -> (unit, applies to, meaning)
COST: dict[str, tuple[str, str, str]] = {
    "cost.usd_per_gpu_hour": (
        "USD/GPU-h",
        "both",
        ("Rental price used: scenario pricing, else the catalog's typical on-demand price"),
    ),
    "cost.usd_per_hour": ("USD/h", "both", "Rental cost of all GPUs per hour"),
    "cost.usd_per_million_tokens": (
        "USD/Mtoken",
        "both",
        (
            "Rental cost per million tokens processed: input + output "
            "when serving, training tokens when training"
        ),
    ),
    "cost.usd_per_million_tokens_low": ("USD/Mtoken", "both", "The same at the optimistic throughput"),
    "cost.usd_per_million_tokens_high": ("USD/Mtoken", "both", "The same at the pessimistic throughput"),
    "cost.usd_per_million_input_tokens": (
        "USD/Mtoken",
        "inference",
        ("Cost per million prompt tokens: the prompt share of GPU time over the prompt tokens"),
    ),
    "cost.usd_per_million_output_tokens": (
        "USD/Mtoken",
        "inference",
        ("Cost per million generated tokens: the decode share of GPU time over the output tokens"),
    ),
    "cost.total_usd": ("USD", "training", "Rental cost of the training run (scenario.train_tokens)"),
    "cost.total_usd_low": ("USD", "training", "Run cost at the optimistic time to train"),
    "cost.total_usd_high": ("USD", "training", "Run cost at the pessimistic time to train"),
    "cost.gpu_hours": ("GPU-h", "training", "GPU-hours of the training run"),
    "cost.run_owned_usd": (
        "USD",
        "training",
        (
            "The run's GPU-hours at the owned cost per GPU-hour (capex "
            "depreciated straight-line over pricing.years, plus power)"
        ),
    ),
    "cost.power_kw": (
        "kW",
        "both",
        "Facility power while working: GPUs at the estimated utilization, host share, PUE",
    ),
    "cost.energy_usd_per_hour": ("USD/h", "both", "Electricity cost per working hour"),
    "cost.energy_kwh": ("kWh", "training", "Facility energy of the training run"),
    "cost.co2_kg": ("kg CO2e", "training", "CO2 of the run: energy x grid_kg_co2_per_kwh"),
    "cost.energy_kwh_per_million_tokens": (
        "kWh/Mtoken",
        "both",
        "Facility energy per million tokens processed",
    ),
    "cost.co2_kg_per_million_tokens": ("kg CO2e/Mtoken", "both", "CO2 per million tokens processed"),
    "cost.tco.capex_usd": ("USD", "both", "GPUs x purchase price x (1 + server_overhead_fraction)"),
    "cost.tco.buy_usd": (
        "USD",
        "both",
        ("Owning over pricing.years: capex + electricity (busy at pricing.utilization, idle otherwise)"),
    ),
    "cost.tco.rent_usd": ("USD", "both", "Renting the same useful GPU-hours over pricing.years"),
    "cost.tco.owned_usd_per_gpu_hour": ("USD/GPU-h", "both", "Owning cost per useful GPU-hour"),
    "cost.tco.break_even_months": (
        "months",
        "both",
        (
            "Months of use after which buying has cost less than renting; "
            "null when renting is cheaper than the power of owning"
        ),
    ),
    "cost.tco.cheaper": ("text", "both", "buy or rent over pricing.years"),
}

_LABELS = {
    "cost.usd_per_gpu_hour": "Rental price per GPU-hour",
    "cost.usd_per_hour": "Rental cost per hour",
    "cost.usd_per_million_tokens": "Cost per million tokens",
    "cost.usd_per_million_tokens_low": "Cost per million tokens, optimistic",
    "cost.usd_per_million_tokens_high": "Cost per million tokens, pessimistic",
    "cost.usd_per_million_input_tokens": "Cost per million input tokens",
    "cost.usd_per_million_output_tokens": "Cost per million output tokens",
    "cost.total_usd": "Cost of the run (rented)",
    "cost.total_usd_low": "Cost of the run, optimistic",
    "cost.total_usd_high": "Cost of the run, pessimistic",
    "cost.gpu_hours": "GPU-hours of the run",
    "cost.run_owned_usd": "Cost of the run on owned GPUs",
    "cost.power_kw": "Facility power while working",
    "cost.energy_usd_per_hour": "Electricity per hour",
    "cost.energy_kwh": "Energy of the run",
    "cost.co2_kg": "CO2 of the run",
    "cost.energy_kwh_per_million_tokens": "Energy per million tokens",
    "cost.co2_kg_per_million_tokens": "CO2 per million tokens",
    "cost.tco.capex_usd": "Purchase cost (GPUs + servers)",
    "cost.tco.buy_usd": "Buy: capex + power over the period",
    "cost.tco.rent_usd": "Rent: same GPU-hours over the period",
    "cost.tco.owned_usd_per_gpu_hour": "Owned cost per useful GPU-hour",
    "cost.tco.break_even_months": "Break-even of buying",
    "cost.tco.cheaper": "Cheaper over the period",
}


def label(key: str) -> str:
    return _LABELS[key]


def unit(key: str) -> str:
    u = COST[key][0]
    return "" if u == "text" else u
