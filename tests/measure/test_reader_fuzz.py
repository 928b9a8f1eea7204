"""Whatever a result file holds, reading it gives measurements or one MeasurementError: never
another exception (a traceback on the command line)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.measure import MeasurementError, read_measurements

DATA = Path(__file__).parents[1] / "data" / "measurements"
SAMPLES = sorted(p for p in DATA.iterdir() if p.is_file() and p.suffix != ".md")

_values = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True),
                    st.text(max_size=8), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5),
                                                                                             st.integers(), max_size=3))


def _read(name: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            for m in read_measurements(path):
                assert m.metrics and all(v > 0 for v in m.metrics.values())
        except MeasurementError as exc:
            assert "\n" not in str(exc)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(sample=st.sampled_from(SAMPLES), key_index=st.integers(0, 200), value=_values)
def test_one_field_of_a_sample_changed(sample: Path, key_index: int, value: object) -> None:
    text = sample.read_text()
    if sample.suffix == ".json":
        doc = json.loads(text)
        keys = sorted(doc)
        doc[keys[key_index % len(keys)]] = value
        _read(sample.name, json.dumps(doc).encode())
    else:
        lines = text.splitlines()
        i = key_index % len(lines)
        lines[i] = lines[i][: key_index % (len(lines[i]) + 1)] + str(value)
        _read(sample.name, "\n".join(lines).encode())


@settings(max_examples=150, deadline=None, derandomize=True)
@given(name=st.sampled_from(["r.json", "r.jsonl", "r.csv", "r.log", "mlperf_log_summary.txt"]),
       data=st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_arbitrary_bytes(name: str, data: bytes) -> None:
    _read(name, data)
