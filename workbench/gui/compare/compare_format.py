"""How comparison and sensitivity figures read in the window: short accelerator names, values in
the unit their column or axis names, and the engine's reasons in the window's words."""

from __future__ import annotations

import re

from workbench.engine.compare import CandidateResult
from workbench.report import numbers

#: Decision confidence choices (the Ranking's and the equal-service-level page's): (draws, label); 0 is off.
CONFIDENCE_DRAWS = ((0, "off"), (200, "200 draws"), (1000, "1,000 draws"))

_VENDOR_WORDS = re.compile(r"^(NVIDIA|AMD|Intel|Google Cloud|Google|Apple)\s+(Instinct\s+|GeForce\s+|Tesla\s+)?")
_BRACKETS = re.compile(r"\s*\([^)]*\)")

#: The engine's reasons name CLI flags; the window names the field instead.
_FLAG_WORDS = {
    "no price: enter --usd-per-gpu-hour": "no rental price (Scenario > Prices and power, or the accelerator's)",
    "budget not checked: no price, enter --purchase-usd": "budget not checked: no purchase price",
    "budget not checked: no price, enter --usd-per-gpu-hour": "budget not checked: no rental price",
    "(--train-tokens)": "(Scenario > Training tokens)",
    "enter one (ID@USD in --gpus-list)": "enter one (double-click its price in the Ranking)",
    "enter --usd-per-gpu-hour": "enter a rental price per GPU-hour (Scenario > Prices and power)",
    "--usd-per-gpu-hour": "a rental price per GPU-hour",
    "--purchase-usd": "a purchase price per GPU",
}


def short_name(name: str, limit: int = 30) -> str:
    """``NVIDIA H100 SXM5 80 GB`` -> ``H100 SXM5 80 GB``; bracketed notes dropped; at most ``limit``
    characters, cut after a whole word where there is one (``GH200 Grace Hopper``)."""
    short = _BRACKETS.sub("", _VENDOR_WORDS.sub("", name)).strip() or name
    if len(short) <= limit:
        return short
    head = short[:limit + 1]
    if " " in head:
        cut = head.rsplit(" ", 1)[0].rstrip()
        if len(cut) >= limit // 2:
            return cut
    return short[: limit - 1].rstrip() + "…"


def gui_words(reason: str) -> str:
    for flag, words in _FLAG_WORDS.items():
        reason = reason.replace(flag, words)
    return reason


def verdict(result: CandidateResult, best: CandidateResult | None) -> str:
    """Why a candidate is not the pick, short: its failed targets, or its cost against the pick."""
    if result.recommended:
        return "recommended: cheapest that qualifies"
    if result.failures:
        return "; ".join(gui_words(f) for f in result.failures)
    if best is not None and result.cost is not None and best.cost:
        return f"meets the targets, but costs {result.cost / best.cost:.2f}x as much"
    return gui_words(result.verdict)


def number(value: float) -> str:
    """A table cell's number (the one policy, :mod:`workbench.report.numbers`): 0.0213, 38.4, 3,400, 6.54M."""
    return numbers.number(value, compact=True)


def usd(value: float) -> str:
    """A cell's money: $0.036, $0.22, $4.10, $412, $41K, $1.23M."""
    return numbers.money(value, compact=True)


def money(value: float) -> str:
    """A price: always cents below $100 ($0.07, $2.10, $99.50), whole dollars above ($1,250)."""
    return numbers.money(value)


def with_unit(value: float | None, unit: str) -> str:
    """A value in its unit for people: 38 ms, $0.21/M tokens, $1.2M, 3,400 tokens/s, 0.7x price."""
    if value is None:
        return "n/a"
    if unit == "s":
        return numbers.seconds(value)
    if unit == "USD/Mtoken":
        return f"{usd(value)}/M tokens"
    if unit.startswith("USD/"):
        return f"{usd(value)}/{unit[4:]}"
    if unit == "USD":
        return usd(value)
    if unit == "x price":
        return f"{value:.2g}x price"
    if unit == "fraction":
        return numbers.percent(value)
    if unit in ("", "ratio"):
        return number(value)
    return f"{number(value)} {unit}"


def headline(result: CandidateResult) -> str:
    """``8 x H200 SXM 141 GB — $0.21/M tokens, TPOT 38 ms`` (a recommendation in one line)."""
    values = result.values
    parts = []
    cost = values.get(result.cost_metric)
    if isinstance(cost, (int, float)):
        parts.append(f"{usd(cost)}/M tokens" if result.cost_metric == "usd_per_m_tokens"
                     else f"{numbers.money(cost, compact=True)} per training run")
    tpot, days = values.get("tpot_s"), values.get("train_days")
    if isinstance(tpot, (int, float)):
        parts.append(f"TPOT {numbers.seconds(tpot)}")
    elif isinstance(days, (int, float)):
        parts.append(f"{numbers.days(days)} to train")
    gpus = result.gpus or 0
    text = f"{gpus:,} x {short_name(result.accelerator_name)}"
    return text + (" — " + ", ".join(parts) if parts else "")


def low_high(result: CandidateResult, metric: str, unit: str) -> str:
    """``$0.18 – $0.27/M tokens``: the metric with every efficiency assumption at one end, or ''."""
    low, high = result.values.get(f"{metric}_low"), result.values.get(f"{metric}_high")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return ""
    low, high = sorted((float(low), float(high)))
    return f"{with_unit(low, unit)} – {with_unit(high, unit)}"
