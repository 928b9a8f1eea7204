"""Fuzzing the CLI boundary: random flags and values, random scenario files (JSON, YAML, raw
bytes). Every run must end in exit 0 with a strict JSON answer, or exit 2 with exactly one line on
stderr; never a traceback, never a hang, never a changed input file.

The CLI runs in-process (``main(argv)``) so that hundreds of runs fit in a few seconds; each run
has a 10 s alarm. Bounded and derandomized, so CI sees the same examples every time.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.cli.scenario_flags import _FLAGS

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def check_run(argv: list[str], json_out: bool = True) -> int:
    """Run the CLI once and hold it to the contract; return the exit code."""
    out, err = io.StringIO(), io.StringIO()
    with time_limit(10), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    stdout, stderr = out.getvalue(), err.getvalue()
    assert "Traceback" not in stderr and "Traceback" not in stdout
    assert "\x1b" not in stdout and "\x1b" not in stderr
    if code == 0:
        assert stderr == "", stderr[:500]
        if json_out:
            json.loads(stdout, parse_constant=_refuse_constant)
    else:
        assert code == 2, (code, stderr[:500])
        assert stdout == ""
        assert len(stderr.strip().splitlines()) == 1, stderr[:2000]
    event(f"exit {code}")  # --hypothesis-show-statistics: how many runs were answered, how many refused
    return code


# --- values --------------------------------------------------------------------------------------

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
numbers_as_text = st.one_of(
    st.integers(min_value=-10, max_value=4096).map(str),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "9" * 5000, "-" + "9" * 4400, "0x10", "1_000",
                     "1048576", "1048577", "16777216", "16777217", "", " 3 ", "1e-300"]),
)
flag_values = st.one_of(numbers_as_text, texts, st.just("x" * 10_000))
flag_names = [flag for flag, *_ in _FLAGS] + ["--set", "--sp", "--model", "--scenario", "--project"]
assumption_ids = st.sampled_from(["memory.fragmentation", "memory.cuda_context_gib", "perf.kernel_efficiency_scale",
                                  "comm.bandwidth_efficiency", "no.such.id", ""])


_PLAUSIBLE = {flag: (choices, typ) for flag, _, typ, choices, _ in _FLAGS}


def plausible(name: str) -> st.SearchStrategy[str]:
    """A value such as a user would give (most runs should get as far as an estimate)."""
    choices, typ = _PLAUSIBLE[name]
    if choices:
        return st.sampled_from(choices)
    if typ is int:
        return st.sampled_from([1, 2, 4, 8, 16, 64, 512, 4096]).map(str)
    if typ is float:
        return st.sampled_from([0.05, 0.5, 0.9, 1.0, 2.0, 1e12]).map(repr)
    return st.sampled_from(["h100-sxm", "a100-80gb-sxm", "dgx-h100", "run"])


@st.composite
def flag(draw: st.DrawFn) -> list[str]:
    name = draw(st.sampled_from(flag_names))
    if name in _PLAUSIBLE and draw(st.integers(0, 2)):
        return [name, draw(plausible(name))]
    if name == "--sp":
        return [name]
    if name == "--set":
        return [name, f"{draw(assumption_ids)}={draw(numbers_as_text)}"]
    if name == "--model":
        return [name, draw(st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "gpt2", "nope"]) | texts)]
    if name in ("--scenario", "--project"):
        return [name, draw(st.sampled_from(["/dev/zero", "/nonexistent.yaml", "/", "x" * 5000]) | texts)]
    if draw(st.booleans()):
        return [f"{name}={draw(flag_values)}"]
    return [name, draw(flag_values)]


commands = st.sampled_from([
    ["scenario", "--json"], ["estimate", "--json"], ["solve", "max-context", "--json"],
    ["solve", "max-batch", "--json"], ["solve", "layouts", "--json"], ["sweep"],
    ["compare", "--gpus-list", "h100-sxm,l4", "--json"], ["sensitivity", "--json"],
])


@FUZZ
@given(command=commands, flags=st.lists(flag(), max_size=5), base=st.booleans())
def test_cli_flags(command: list[str], flags: list[list[str]], base: bool) -> None:
    argv = [*command, *(["--model", "llama-3.1-8b", "--gpu", "h100-sxm"] if base else [])]
    for item in flags:
        argv += item
    if command == ["sweep"]:
        argv += ["--vary", "batch=1,2", "--keys", "memory.fits"]
    check_run(argv)


# --- scenario files ------------------------------------------------------------------------------

FIELDS = ["name", "model", "gpu", "node", "num_gpus", "workload", "method", "lora_rank", "dtype", "weights",
          "batch_size", "seq_len", "gen_len", "global_batch_size", "train_tokens", "parallel", "tp", "pp",
          "dp", "ep", "zero_stage", "serving", "pricing", "pue", "years", "mfu", "assumptions",
          "memory.fragmentation", "memory.cuda_context_gib", "schema_version"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True), texts, st.just("\x1b]0;title\x07"), st.just("y" * 5000),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(FIELDS) | texts, children, max_size=4),
    ),
    max_leaves=20,
)
documents = st.dictionaries(st.sampled_from(FIELDS) | texts, values, max_size=8)


sensible = st.fixed_dictionaries(
    {"model": st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "gpt2"])},
    optional={
        "gpu": st.sampled_from(["h100-sxm", "l4", "mi300x"]),
        "workload": st.sampled_from(["inference", "finetune", "pretrain"]),
        "batch_size": st.integers(1, 256),
        "seq_len": st.sampled_from([128, 2048, 32768]),
        "num_gpus": st.sampled_from([1, 2, 8]),
        "parallel": st.fixed_dictionaries({}, optional={"tp": st.sampled_from([1, 2, 8]), "zero_stage": st.integers(0, 3)}),
        "assumptions": st.dictionaries(st.sampled_from(["memory.fragmentation", "perf.kernel_efficiency_scale"]),
                                       st.floats(0.05, 1.0), max_size=2),
    },
)


def _deep(depth: int, as_json: bool) -> str:
    return ("[" * depth + "]" * depth) if as_json else ("a: " + "[" * depth + "]" * depth)


@st.composite
def scenario_file(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["json", "yaml", "json", "yaml", "bytes", "deep", "digits"]))
    if draw(st.booleans()):  # a scenario a user would write, with one hostile entry or none
        doc = draw(sensible)
        if draw(st.booleans()):
            doc.update(draw(documents.filter(bool)))
    else:
        doc = draw(documents)
    if kind == "json":
        return "s.json", json.dumps(doc).encode()  # NaN/Infinity tokens included, as Python writes them
    if kind == "yaml":
        return "s.yaml", yaml.safe_dump(doc, allow_unicode=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return draw(st.sampled_from(["s.json", "s.yaml"])), draw(st.binary(max_size=300))
    if kind == "deep":
        as_json = draw(st.booleans())
        depth = draw(st.integers(min_value=20, max_value=20_000))
        return ("s.json" if as_json else "s.yaml"), _deep(depth, as_json).encode()
    digits = "9" * draw(st.integers(min_value=4000, max_value=6000))
    field = draw(st.sampled_from(["batch_size", "train_tokens", "name"]))
    return "s.json", f'{{"model": "llama-3.1-8b", "{field}": {digits}}}'.encode()


@FUZZ
@given(spec=scenario_file(), command=commands, extra=st.lists(flag(), max_size=2))
def test_scenario_files(tmp_path_factory: pytest.TempPathFactory, spec: tuple[str, bytes], command: list[str],
                        extra: list[list[str]]) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    name, content = spec
    path = Path(folder) / name
    path.write_bytes(content)
    argv = [*command, "--scenario", str(path)]
    for item in extra:
        if item[0] not in ("--scenario", "--project") and not item[0].startswith(("--scenario=", "--project=")):
            argv += item
    if command == ["sweep"]:
        argv += ["--vary", "batch=1,2", "--keys", "memory.fits"]
    check_run(argv)
    assert path.read_bytes() == content


def test_model_path_of_an_unknown_users_home(capsys: pytest.CaptureFixture[str]) -> None:
    """Found by this fuzz suite: '~name' of an unknown user made Path.expanduser() raise."""
    assert main(["scenario", "--json", "--model", "~no-such-user-here/config.json"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no such user" in err
