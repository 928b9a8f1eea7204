"""The one number format of Results, Compare and the PDF (workbench.report.numbers)."""

from __future__ import annotations

import pytest

from workbench.engine.quantity import FixedQuantity
from workbench.gui.compare.compare_format import usd, with_unit
from workbench.gui.explain_text import quantity_text
from workbench.report import numbers
from workbench.report.sections import format_value


@pytest.mark.parametrize(("value", "text"), [
    (0.021345, "0.0213"), (1.2745, "1.27"), (38.44, "38.4"), (412.3, "412"), (999.7, "1,000"), (3400.2, "3,400"),
    (12345.6, "12,346"), (9.9996, "10.0"), (0, "0"), (-2.5, "-2.50"),
])
def test_plain_numbers_have_three_significant_digits_and_grouped_thousands(value: float, text: str) -> None:
    assert numbers.number(value) == text


def test_compact_numbers_use_a_suffix_from_a_million() -> None:
    assert numbers.number(6_537_421, compact=True) == "6.54M"
    assert numbers.number(1.2e9, compact=True) == "1.20B"
    assert numbers.number(999_999, compact=True) == "999,999"


@pytest.mark.parametrize(("value", "text"), [
    (0.22, "$0.22"), (0.104, "$0.10"), (2.1, "$2.10"), (99.5, "$99.50"), (0.0359, "$0.036"), (0.00842, "$0.0084"),
    (1250.4, "$1,250"), (0, "$0.00"),
])
def test_money_has_cents_below_100_dollars_and_never_rounds_a_rate_to_zero(value: float, text: str) -> None:
    assert numbers.money(value) == text


def test_compact_money_and_durations() -> None:
    assert numbers.money(26_400, compact=True) == "$26K"
    assert numbers.money(1_234_000, compact=True) == "$1.23M"
    assert numbers.seconds(0.0069) == "6.90 ms" and numbers.seconds(4.1) == "4.10 s"
    assert numbers.days(0.8143) == "19.5 h" and numbers.days(12.25) == "12.2 days"
    assert numbers.percent(0.333) == "33%" and numbers.percent(0.045) == "4.5%"


@pytest.mark.parametrize(("value", "unit", "window", "pdf"), [
    (0.104, "USD/Mtoken", "$0.10 per M tokens", "$0.10 per M tokens"),
    (0.22, "USD/Mtoken", "$0.22 per M tokens", "$0.22 per M tokens"),
    (0.8143, "days", "19.5 h", "19.5 h"),
    (0.3312, "fraction", "33%", "33%"),
    (4118.7, "tokens/s", "4,119 tokens/s", "4,119 tokens/s"),
])
def test_results_and_the_pdf_print_a_figure_alike(value: float, unit: str, window: str, pdf: str) -> None:
    quantity = FixedQuantity(value=value, unit=unit, label="x")
    assert quantity_text(quantity) == window
    assert format_value(quantity) == pdf


def test_compare_cells_follow_the_same_policy() -> None:
    assert usd(0.104) == "$0.10" and usd(26_400) == "$26K"
    assert with_unit(0.0069, "s") == "6.90 ms"
    assert with_unit(6_537_421, "tokens/kWh") == "6.54M tokens/kWh"


def test_the_pdf_comparison_reads_as_the_compare_tab() -> None:
    from workbench.report.sections import format_metric_safe

    assert format_metric_safe("tpot_s", 0.0069) == with_unit(0.0069, "s") == "6.90 ms"
    assert format_metric_safe("usd_per_m_tokens", 0.0359) == "$0.036/Mtoken"
    assert format_metric_safe("tco_buy_usd", 26_400) == usd(26_400) == "$26K"
    assert format_metric_safe("tokens_per_kwh", 6_537_421) == "6.54M tokens/kWh"
    assert format_metric_safe("tpot_s", None) == "-"
