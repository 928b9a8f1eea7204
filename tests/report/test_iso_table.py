"""The report's table at equal service level: a search that stopped before it knew reads
'not settled', apart from a candidate that does not meet the targets."""

from __future__ import annotations

from typing import Any

from workbench.engine.compare import Candidate
from workbench.engine.iso_sla import IsoResult
from workbench.report.sections import _iso_body


class _Recorder:
    """Stands in for the report body: keeps the table's rows."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    def heading(self, *_: Any, **__: Any) -> None:
        pass

    def intro(self, *_: Any, **__: Any) -> None:
        pass

    def para(self, *_: Any, **__: Any) -> None:
        pass

    def table(self, headers: list[str], rows: list[list[str]], **_: Any) -> None:
        self.rows = rows


def test_not_settled_and_a_miss_read_apart() -> None:
    unsettled = IsoResult(Candidate("a10"), None, False, "not settled: dearer ones were not simulated", 12,
                          rank=1, settled=False)  # fmt: skip
    missed = IsoResult(Candidate("l4"), None, False, "TPOT <= 50 ms (best reached 84.3 ms)", 20, rank=2)
    body = _Recorder()
    _iso_body("Serve", [unsettled, missed], None, True, body)  # type: ignore[arg-type]
    first, second = (row[2] for row in body.rows)
    assert first.startswith("not settled") and "does not meet" not in first
    assert second.startswith("does not meet the targets") and "TPOT" in second
