"""`compare` with a serving load: simulated columns (units in the headers) in the text, the JSON
and the CSV; none of them without a load."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_cli_bad_input import run_cli

from workbench.report.exports import parse_csv

SCENARIO = ["--model", "llama-3.1-8b", "--batch", "16", "--seq-len", "8192", "--gen-len", "128",
            "--batching", "chunked", "--gpus-list", "h100-sxm,l40s"]
LOAD = ["--arrival-rate", "4", "--requests", "200"]
SIM_HEADERS = ("TTFT p50 (s)", "TTFT p99 (s)", "TPOT p50 (ms)", "TPOT p99 (ms)", "goodput (req/s)")


def test_text_shows_the_simulated_columns_only_under_a_load(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", *SCENARIO, *LOAD, "--max-tpot", "0.04")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("  under load: 200 requests, 4 requests/s, chunked batching")
    for header in SIM_HEADERS:
        assert header in lines[2]
    # l40s is far slower than 40 ms per token: its reason quotes the simulated p99 and the load.
    l40s = next(line for line in lines if " l40s " in line)
    assert "p99 TPOT" in l40s and "under 4 req/s exceeds 40 ms" in l40s
    code, out, err = run_cli(capsys, "compare", *SCENARIO, "--max-tpot", "0.04")
    assert code == 0, err
    assert "under load" not in out and not any(h in out for h in SIM_HEADERS) and "p99" not in out


def test_json_and_csv_carry_the_simulated_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", *SCENARIO, *LOAD, "--json")
    assert code == 0, err
    doc = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))
    ids = [m["id"] for m in doc["metrics"]]
    assert "sim_ttft_p99_s" in ids and "sim_goodput_rps" in ids
    for row in doc["scenarios"][0]["results"]:
        v = row["values"]
        assert v["sim_ttft_p50_s"] <= v["sim_ttft_p99_s"] and v["sim_tpot_p50_s"] <= v["sim_tpot_p99_s"]
        assert all(not (isinstance(x, float) and not math.isfinite(x)) for x in v.values())
    csv_path = tmp_path / "c.csv"
    code, _, err = run_cli(capsys, "compare", *SCENARIO, *LOAD, "--csv", str(csv_path))
    assert code == 0, err
    header = csv_path.read_text().splitlines()[0]
    assert "TTFT p99 under load (s)" in header and "Goodput under load (requests/s)" in header
    rows = parse_csv(csv_path.read_text())
    assert rows[0]["sim_tpot_p99_s"] == pytest.approx(doc["scenarios"][0]["results"][0]["values"]["sim_tpot_p99_s"])
    code, out, err = run_cli(capsys, "compare", *SCENARIO, "--json")
    assert code == 0, err
    plain = json.loads(out)
    assert not any(m["id"].startswith("sim_") for m in plain["metrics"])
    assert not any(k.startswith("sim_") for k in plain["scenarios"][0]["results"][0]["values"])
