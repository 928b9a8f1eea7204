"""Serving-load flags: parsed into the scenario, saved in a project and read back; bad values and
bad trace files refused in one line (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli.main import main
from workbench.core.errors import InputError
from workbench.core.limits import MAX_TRACE_BYTES
from workbench.core.request_trace import read_trace
from workbench.core.scenario import Batching, Scenario, ServingOptions

FLAGS = ["--batching", "chunked", "--arrival-rate", "7.5", "--arrival-cv", "2", "--requests", "300",
         "--slo-ttft", "0.8", "--slo-tpot", "0.04"]


def _scenario_json(capsys, *args: str) -> dict:  # type: ignore[no-untyped-def]
    assert main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_flags_reach_the_scenario_and_the_simulated_keys(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trace = tmp_path / "t.csv"
    trace.write_text("prompt_tokens,output_tokens\n512,64\n1024,32\n")
    doc = _scenario_json(capsys, *FLAGS, "--trace", str(trace))
    sv = doc["scenario"]["serving"]
    assert (sv["batching"], sv["arrival_rate"], sv["arrival_cv"], sv["requests"]) == ("chunked", 7.5, 2.0, 300)
    assert (sv["slo_ttft_s"], sv["slo_tpot_s"], sv["trace"]) == (0.8, 0.04, str(trace))
    sim = doc["performance"]["sim"]
    assert sim["ttft_p50_s"] <= sim["ttft_p90_s"] <= sim["ttft_p99_s"]
    formula = doc["explain"]["performance.sim.ttft_p99_s"]["formula"]
    assert "simulated: 2 requests of the trace" in formula and "seed 0" in formula and "chunked" in formula


def test_flags_round_trip_through_a_project(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc = _scenario_json(capsys, *FLAGS)
    project = tmp_path / "p.gpuwb"
    assert main(["project", "new", str(project)]) == 0
    assert main(["project", "add-scenario", str(project), "--name", "load", "--model", "llama-3.1-8b",
                 "--gpu", "h100-sxm", *FLAGS]) == 0
    capsys.readouterr()
    assert main(["estimate", "--project", str(project), "--scenario", "load", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["scenario"]["serving"] == doc["scenario"]["serving"]
    assert again["performance"]["sim"] == doc["performance"]["sim"]  # seeded: the same run


def test_older_payloads_keep_their_batching() -> None:
    assert ServingOptions.model_validate({}).batching is Batching.CONTINUOUS
    assert ServingOptions.model_validate({"chunked_prefill": True}).batching is Batching.CHUNKED
    assert ServingOptions.model_validate({"continuous_batching": False}).batching is Batching.STATIC
    # Static batching ignored chunked prefill in the serving model; it still does.
    assert ServingOptions.model_validate({"continuous_batching": False, "chunked_prefill": True}).batching is Batching.STATIC
    old = Scenario.model_validate({"model": "llama-3.1-8b", "gpu": "h100-sxm", "serving": {"continuous_batching": False}})
    assert not old.serving.continuous_batching
    assert Scenario.model_validate(old.model_dump(mode="json")) == old
    with pytest.raises(ValueError, match="disagrees"):
        ServingOptions.model_validate({"batching": "chunked", "continuous_batching": False})


@pytest.mark.parametrize("flags, message", [
    (["--batching", "dynamic"], "invalid choice"),
    (["--arrival-rate", "0"], "arrival_rate"),
    (["--arrival-rate", "nan"], "not a finite number"),
    (["--arrival-cv", "-1"], "arrival_cv"),
    (["--requests", "1000000"], "requests"),
    (["--requests", "1.5"], "whole number"),
    (["--slo-ttft", "0"], "slo_ttft_s"),
    (["--slo-tpot", "inf"], "not a finite number"),
])
def test_bad_values_exit_2_with_one_line(capsys, flags: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    try:
        code = main(["estimate", "--model", "llama-3.1-8b", *flags])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err
    assert len(err.splitlines()) <= 3  # argparse's usage line(s) and one message


@pytest.mark.parametrize("content, message", [
    (None, "cannot read the trace (No such file"),
    ("prompt_tokens,output_tokens\n100,nan\n", "output_tokens must be a whole number"),
    ('{"prompt_tokens": 10, "output_tokens": NaN}\n', "output_tokens must be a whole number"),
    ("prompt_tokens,output_tokens,arrival_s\n100,10,inf\n", "arrival_s must be finite"),
    ("prompt_tokens,output_tokens\n100,0\n", "from 1 to"),
    ("\x00\xff garbage \x01", "not UTF-8"),
    ("this is not a trace\n1,2\n", "the header must name prompt_tokens and output_tokens"),
    ('{"prompt_tokens": 10}\n', "output_tokens is missing"),
    ("[1, 2]\n", "header must name"),
    ("prompt_tokens,output_tokens,arrival_s\n100,10,1\n100,10,\n", "every line or on none"),
    ("prompt_tokens,output_tokens\n", "holds no requests"),
    ("prompt_tokens,output_tokens\n1,2,3\n", "3 values for 2 columns"),
])
def test_bad_trace_files_are_refused_in_one_line(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "trace.csv"
    if content is not None:
        path.write_bytes(content.encode("latin-1"))
    with pytest.raises(InputError) as exc:
        read_trace(path)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_a_huge_trace_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)  # sparse: no disk used
    with pytest.raises(InputError, match="the limit is"):
        read_trace(path)


def test_a_trace_is_replayed_in_arrival_order_and_cut_at_requests(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps({"prompt_tokens": p, "output_tokens": 5, "arrival_s": t})
                              for p, t in ((30, 2.0), (10, 0.5), (20, 1.0))) + "\n")
    trace = read_trace(path)
    assert trace.prompt_tokens == (10, 20, 30) and trace.arrival_s == (0.5, 1.0, 2.0)
    assert len(read_trace(path, 2)) == 2


def test_a_bad_trace_on_the_command_line_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("prompt_tokens,output_tokens\nx,1\n")
    run = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "estimate", "--model", "llama-3.1-8b", "--trace", str(path)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "prompt_tokens is not a number" in run.stderr
