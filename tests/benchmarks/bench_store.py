"""Project file speed: save and open a project with 500 scenarios (targets: < 0.5 s, < 1 s).

Run: .venv/bin/python tests/benchmarks/bench_store.py  -> prints one JSON object.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from project_factory import sample_project  # noqa: E402

from workbench.store import open_project, save_project  # noqa: E402


def main(repeat: int = 7) -> dict[str, float]:
    project = sample_project(500)
    saves, opens = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.gpuwb"
        for _ in range(repeat):
            start = time.perf_counter()
            save_project(project, path)
            saves.append(time.perf_counter() - start)
            start = time.perf_counter()
            loaded = open_project(path)
            opens.append(time.perf_counter() - start)
        assert len(loaded.scenarios) == 500
    return {
        "project_save_500_scenarios_s": round(statistics.median(saves), 4),
        "project_open_500_scenarios_s": round(statistics.median(opens), 4),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
