"""Validation at the CLI boundary: finite numbers, documented limits, assumption ranges, and
scenario files checked before they are read. Every refusal is one line on stderr and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core import limits

BASE = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI, check it refused with exactly one line (no traceback), return that line."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (code, out[:300], err[:300])
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gpu-workbench") and "Traceback" not in err
    return lines[0]


# --- assumption ranges ----------------------------------------------------------------------------


@pytest.mark.parametrize("setting, needles", [
    ("memory.fragmentation=nan", ["memory.fragmentation", "nan", "not a finite number", "0 to 1"]),
    ("memory.fragmentation=inf", ["memory.fragmentation", "inf", "0 to 1"]),
    ("memory.fragmentation=-inf", ["memory.fragmentation", "-inf"]),
    ("memory.fragmentation=1e999", ["memory.fragmentation", "inf"]),
    ("memory.fragmentation=2", ["memory.fragmentation", " 2 ", "0 to 1"]),
    ("memory.cuda_context_gib=-1", ["memory.cuda_context_gib", "-1", "0 to 64"]),
    ("perf.kernel_efficiency_scale=1e9", ["perf.kernel_efficiency_scale", "1e+09", "0.01 to 2"]),
    ("comm.bandwidth_efficiency=0", ["comm.bandwidth_efficiency", "0.01 to 1"]),
    ("perf.step_overhead_s=-0.001", ["perf.step_overhead_s", "0 to 60"]),
    ("no.such.assumption=nan", ["no.such.assumption", "not a finite number"]),
])
def test_set_outside_the_range_is_refused(capsys: pytest.CaptureFixture[str], setting: str,
                                          needles: list[str]) -> None:
    line = refused(capsys, "estimate", *BASE, "--set", setting, "--json")
    for needle in needles:
        assert needle in line, line


def test_scenario_file_assumptions_are_checked_like_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text, needle in [
        ("model: llama-3.1-8b\nassumptions:\n  memory.fragmentation: .nan\n", "not a finite number"),
        ("model: llama-3.1-8b\nassumptions:\n  memory.cuda_context_gib: -3\n", "0 to 64"),
        ("model: llama-3.1-8b\nassumptions:\n  perf.kernel_efficiency_scale: '7'\n", "0.01 to 2"),
        ("model: llama-3.1-8b\nassumptions: [1, 2]\n", "assumptions"),
    ]:
        path = tmp_path / "s.yaml"
        path.write_text(text)
        line = refused(capsys, "estimate", "--scenario", str(path))
        assert needle in line, line
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"model": "llama-3.1-8b", "assumptions": {"memory.fragmentation": 0.33}}))
    code, out, _ = run_cli(capsys, "estimate", "--scenario", str(good), "--json")
    assert code == 0 and json.loads(out)["memory"]["fits"] is True


def test_every_first_party_assumption_publishes_a_finite_range() -> None:
    from workbench.pluginhost import default_engine

    definitions = default_engine().assumptions
    assert len(definitions) >= 25
    for a in definitions.values():
        assert a.minimum is not None and a.maximum is not None, a.id
        assert a.minimum <= a.default <= a.maximum, a.id
        assert a.problem(a.default) is None and a.problem(a.minimum) is None and a.problem(a.maximum) is None


def test_the_engine_never_reads_an_out_of_range_override() -> None:
    """A scenario that did not come through the CLI (an old project) still cannot push a value
    outside its range into an estimate: the default is used and a warning says so."""
    from workbench.catalog.resolve import resolve_scenario
    from workbench.core.scenario import Scenario
    from workbench.pluginhost import default_engine

    engine = default_engine()
    scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain",
                        assumptions={"memory.cuda_context_gib": -40.0})
    estimate = engine.run(resolve_scenario(scenario))
    plain = engine.run(resolve_scenario(scenario.model_copy(update={"assumptions": {}})))
    assert estimate.get("memory.per_gpu.total") == plain.get("memory.per_gpu.total") > 0
    codes = [w.code for w in estimate.warnings]
    assert "assumption-out-of-range" in codes
    assert not estimate.assumptions.is_overridden("memory.cuda_context_gib")


# --- finite numbers, digits, names ---------------------------------------------------------------


@pytest.mark.parametrize("argv, needle", [
    (["--batch", "inf"], "--batch"),
    (["--batch", "nan"], "--batch"),
    (["--gpus", "9" * 5000], "too large"),
    (["--seq-len", "-" + "9" * 5000], "too large"),
    (["--train-tokens", "inf"], "not a finite number"),
    (["--train-tokens", "1e999"], "not a finite number"),
    (["--train-tokens", "1" * 400], "too long"),
    (["--usd-per-gpu-hour", "nan"], "not a finite number"),
    (["--mfu=-inf"], "not a finite number"),
    (["--batch", "-4"], "batch_size"),
    (["--gen-len", "-1"], "gen_len"),
    (["--name", "n" * 201], "longer than the limit of 200"),
    (["--gpu", "g" * 201], "longer than the limit of 200"),
    (["--node", "x" * 1000], "longer than the limit of 200"),
])
def test_non_finite_huge_and_negative_flags(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    line = refused(capsys, "scenario", *BASE, *argv)
    assert needle in line, line
    assert len(line) < 400  # a 5,000-digit value is not echoed back


def test_model_reference_longer_than_a_path_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, "scenario", "--model", "m" * 5000)
    assert "longer than the limit of 4,096" in line


# --- upper limits on counts ----------------------------------------------------------------------


@pytest.mark.parametrize("argv, needle", [
    (["--pp", "1000000000"], "parallel.pp: more than the limit of 1,048,576"),
    (["--tp", "1000000000"], "parallel.tp: more than the limit of 1,048,576"),
    (["--gpus", "1000000000"], "num_gpus: more than the limit of 1,048,576"),
    (["--dp", str(limits.MAX_GPUS + 1)], "parallel.dp: more than the limit"),
    (["--batch", "1000000000"], "batch_size: more than the limit of 1,048,576"),
    (["--seq-len", "1000000000"], "seq_len: more than the limit of 16,777,216"),
    (["--gen-len", str(limits.MAX_TOKENS + 1)], "gen_len: more than the limit"),
    (["--train-tokens", "1e19"], "train_tokens"),
    (["--usd-per-gpu-hour", "1e12"], "cloud_usd_per_gpu_hour"),
    (["--lora-rank", "99999999"], "lora_rank: more than the limit"),
    (["--gpus", "1048576", "--pp", "1048576"], "PP is at most the layer count"),
])
def test_counts_beyond_the_limits_are_refused_at_once(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                      needle: str) -> None:
    start = time.perf_counter()
    line = refused(capsys, "estimate", *BASE, *argv, "--json")
    assert needle in line, line
    assert time.perf_counter() - start < 5


def test_limits_themselves_are_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "estimate", *BASE, "--gpus", str(limits.MAX_GPUS), "--tp", "8",
                             "--batch", str(limits.MAX_BATCH), "--seq-len", str(limits.MAX_TOKENS), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["memory"]["fits"] is False


def test_solve_layouts_on_a_million_gpus_is_quick(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    line = refused(capsys, "solve", "layouts", *BASE, "--gpus", "1000000000")
    assert "num_gpus: more than the limit of 1,048,576" in line
    code, out, err = run_cli(capsys, "solve", "layouts", *BASE, "--gpus", str(limits.MAX_GPUS), "--json")
    assert code == 0, err
    answer = json.loads(out)["answer"]
    assert answer and all(r["tp"] * r["pp"] * r["dp"] == limits.MAX_GPUS for r in answer)
    assert time.perf_counter() - start < 20


def test_divisors_in_square_root_time() -> None:
    from workbench.engine.solvers import _divisors

    assert _divisors(12) == [1, 2, 3, 4, 6, 12]
    start = time.perf_counter()
    assert len(_divisors(999_999_000_001)) >= 2  # ten-digit prime-ish: a million steps, not 10^12
    assert time.perf_counter() - start < 5


def test_max_context_never_reports_its_search_cap_as_the_answer(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.engine import solvers

    # A small model on eight B200s fits a 64K context; with the search limited to 65,536 the limit
    # itself fits, so the CLI must report a bound ("at least"), not 65,536 as the largest context.
    monkeypatch.setitem(solvers.SEARCH_LIMITS, "seq_len", 65_536)
    code, out, err = run_cli(capsys, "solve", "max-context", "--model", "llama-3.2-1b", "--gpu", "b200",
                             "--gpus", "8", "--tp", "8", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["answer"] is None
    assert doc["at_least"]["seq_len"] == 65_536
    assert "beyond the search limit" in doc["reason"]
    code, out, _ = run_cli(capsys, "solve", "max-context", "--model", "llama-3.2-1b", "--gpu", "b200",
                           "--gpus", "8", "--tp", "8")
    assert "fits beyond the search limit: seq_len >= 65,536" in out
    # Below the limit the answer is an answer.
    monkeypatch.setitem(solvers.SEARCH_LIMITS, "seq_len", limits.MAX_TOKENS)
    code, out, _ = run_cli(capsys, "solve", "max-context", *BASE, "--json")
    doc = json.loads(out)
    assert 1 < doc["answer"]["seq_len"] < limits.MAX_TOKENS and "at_least" not in doc


def test_sweep_beyond_the_cap_is_refused_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    ten_values = ",".join(str(v) for v in range(1, 11))
    argv = ["sweep", *BASE, "--vary", "batch=1..1048576", "--vary", "seq-len=1..16777216",
            "--vary", f"gen-len={ten_values}", "--vary", f"lora-rank={ten_values}",
            "--vary", "tp=1,2,4,8", "--vary", "dtype=bf16,fp8", "--vary", "recompute=none,selective,full",
            "--vary", "zero=0,1,2,3", "--vary", "workload=inference,pretrain"]
    start = time.perf_counter()
    line = refused(capsys, *argv)  # 21 x 25 x 10 x 10 x 4 x 2 x 3 x 4 x 2: about 10^7 points
    assert "= 10,080,000 points is more than the limit of 1,000,000" in line
    assert time.perf_counter() - start < 3
    line = refused(capsys, "sweep", *BASE, "--vary", "batch=" + ",".join(["1"] * 10_001))
    assert "more than 10,000 values on one axis" in line
    line = refused(capsys, "sweep", *BASE, "--vary", "batch=1.." + "9" * 5000)
    assert "at most 20 digits" in line


def test_sweep_points_are_built_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep is cut into bounded blocks, built one at a time, whose points come out in product
    order whatever the block size."""
    import itertools

    from workbench.api import make_scenario
    from workbench.engine import sweep

    huge = [sweep.Axis(f"a{i}", "batch_size", tuple(range(1, 101))) for i in range(4)]  # 10^8 points
    first_prefix, first_axis = next(sweep._blocks(huge))
    assert first_prefix == (1, 1) and first_axis == 2  # 100 x 100 points, not 10^8

    base = make_scenario(model="llama-3.1-8b", gpu="h100-sxm")
    axes = [sweep.parse_axis(spec, base) for spec in ("batch=1,2,3", "tp=1,2", "seq-len=128,256", "gen-len=1,5")]
    everything = list(itertools.product(*(axis.values for axis in axes)))
    from workbench.catalog.resolve import resolve_scenario
    from workbench.pluginhost import default_engine

    for block in (1, 2, 5, 8, 1000):
        monkeypatch.setattr(sweep, "BLOCK_POINTS", block)
        rows = list(sweep.sweep_table(base, axes, resolve_scenario, default_engine(), ["kv_cache.bytes"], workers=1))
        assert [combo for combo, _, _ in rows] == everything
        assert len({values for _, values, _ in rows}) > 1


def test_sweep_json_streams_and_parses(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "sweep", *BASE, "--vary", "batch=1..64", "--vary", "tp=1,2",
                             "--keys", "memory.fits,performance.tpot_s")
    assert code == 0, err
    doc = json.loads(out, parse_constant=_no_constants)
    assert doc["count"] == len(doc["points"]) == 14
    assert doc["points"][0] == {"batch": 1, "tp": 1, "memory.fits": True,
                                "performance.tpot_s": doc["points"][0]["performance.tpot_s"], "error": None}


def _no_constants(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


# --- scenario files: type and size before reading ------------------------------------------------


def test_scenario_file_that_is_not_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "not a regular file" in refused(capsys, "scenario", "--scenario", "/dev/zero")
    assert "a folder" in refused(capsys, "scenario", "--scenario", str(tmp_path))
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    start = time.perf_counter()
    assert "not a regular file" in refused(capsys, "scenario", "--scenario", str(fifo))
    assert time.perf_counter() - start < 2


def test_scenario_file_over_the_size_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:  # sparse: 100 MB on the size, nothing on the disk
        handle.truncate(100 * 1024 * 1024)
    start = time.perf_counter()
    line = refused(capsys, "scenario", "--scenario", str(big))
    assert "104,857,600 bytes; the limit is 16,777,216" in line
    assert time.perf_counter() - start < 2


def _nest(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("name, content, needle", [
    ("latin1.yaml", "model: llama-3.1-8b\nname: caf\xe9\n".encode("latin-1"), "not UTF-8"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("deep.yaml", b"a: " + b"[" * 5000 + b"]" * 5000, "s"),
    ("nested.json", json.dumps({"model": "llama-3.1-8b", "name": _nest(40)}).encode(), "nested more than 32"),
    ("digits.json", b'{"model": "llama-3.1-8b", "batch_size": ' + b"9" * 5000 + b"}", "too large"),
    ("digits.yaml", b"model: llama-3.1-8b\nbatch_size: " + b"9" * 5000 + b"\n", "too large"),
    ("inf.yaml", b"model: llama-3.1-8b\nbatch_size: .inf\n", "batch_size"),
    ("nan.json", b'{"model": "llama-3.1-8b", "train_tokens": NaN}', "finite"),
    ("float-tp.json", b'{"model": "llama-3.1-8b", "parallel": {"tp": 1e308}}', "parallel.tp"),
    ("inf-tp.yaml", b"model: llama-3.1-8b\nparallel: {tp: .inf}\n", "parallel.tp"),
    ("keys.yaml", b"model: llama-3.1-8b\n? [a, b]\n: 1\n", "s"),
    ("parallel.yaml", b"model: llama-3.1-8b\nparallel: 3\n", "parallel"),
    ("laughs.yaml", b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
     b"g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
     b"model: llama-3.1-8b\n", "scenario"),
])
def test_damaged_scenario_files_give_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                              content: bytes, needle: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    start = time.perf_counter()
    line = refused(capsys, "scenario", "--scenario", str(path))
    assert needle in line, line
    assert time.perf_counter() - start < 5
    assert path.read_bytes() == content


def test_real_process_refuses_fifo_and_nan_report(tmp_path: Path) -> None:
    """The real process boundary: no hang on a FIFO, no SIGSEGV on NaN (it is refused first)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    for argv in (["scenario", "--scenario", str(fifo)],
                 ["report", *BASE, "--workload", "pretrain", "--set", "memory.fragmentation=nan",
                  "-o", str(tmp_path / "r.pdf")]):
        result = subprocess.run([sys.executable, "-m", "workbench", *argv], capture_output=True, text=True,
                                env=env, timeout=60)
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "r.pdf").exists()
