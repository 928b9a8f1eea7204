"""docs/plugins.md is current: every hook with its exact signature, the estimator API's fields, and
the tutorial works when followed literally (its files installed as a package, its commands run)."""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import q
from workbench.pluginhost import hookspecs

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "plugins.md").read_text()
BIN = Path(sys.executable).parent


def _hookspecs() -> dict[str, object]:
    return {name: fn for name, fn in vars(hookspecs).items()
            if callable(fn) and getattr(fn, f"{hookspecs.PROJECT}_spec", None) is not None}


def _signature(fn: object) -> str:
    """``def name(param: Annotation) -> Return`` as written in the source (annotations are strings)."""
    sig = inspect.signature(fn)  # type: ignore[arg-type]
    params = ", ".join(f"{p.name}: {p.annotation}" for p in sig.parameters.values())
    return f"def {fn.__name__}({params}) -> {sig.return_annotation}"  # type: ignore[attr-defined]


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    specs = _hookspecs()
    assert len(specs) >= 4
    missing = [_signature(fn) for fn in specs.values() if _signature(fn) not in GUIDE]
    assert missing == [], "document these hooks in docs/plugins.md, signature as in hookspecs.py"


def test_the_guide_names_no_hook_that_does_not_exist() -> None:
    named = set(re.findall(r"\b(workbench_register_\w+)", GUIDE))
    assert named and named <= set(_hookspecs())


def test_the_estimator_api_tables_name_every_field() -> None:
    for name in [f.name for f in dataclasses.fields(EstimatorInfo)]:
        assert f"| `{name}` |" in GUIDE, f"EstimatorInfo.{name} is not in the guide's table"
    for name in [f.name for f in dataclasses.fields(EstimateContext)] + ["gpu"]:
        assert f"`ctx.{name}`" in GUIDE, f"EstimateContext.{name} is not in the guide's table"
    assumption = ", ".join(
        f.name if f.default is dataclasses.MISSING else f"{f.name}={f.default!r}".replace("''", '""')
        for f in dataclasses.fields(Assumption)
    )
    assert f"Assumption({assumption})" in GUIDE
    assert f"q({', '.join(inspect.signature(q).parameters)})" in GUIDE


def _files() -> dict[str, str]:
    files = dict(re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", GUIDE, re.S))
    assert set(files) == {"pyproject.toml", "workbench_hello.py"}
    return files


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The tutorial's package, built and installed (into a folder put on PYTHONPATH)."""
    base = tmp_path_factory.mktemp("hello")
    project, site = base / "workbench-hello", base / "site"
    project.mkdir()
    for name, text in _files().items():
        (project / name).write_text(text)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(site), str(project)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if k not in ("WORKBENCH_NO_ENTRY_POINTS", "WORKBENCH_PLUGINS")}
    env.update(PYTHONPATH=str(site), PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
               WORKBENCH_PLUGINS="hello")
    return {"project": project, "env": env}


def _run(command: str, installed: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=installed["project"], env=installed["env"],  # type: ignore[arg-type]
                          capture_output=True, text=True, timeout=120)


def test_the_tutorial_plugin_is_listed_as_the_guide_shows(installed: dict[str, object]) -> None:
    shown = re.search(r"<!-- output: gpu-workbench plugins -->\n```text\n(.*?)```", GUIDE, re.S)
    assert shown is not None
    done = _run("gpu-workbench plugins", installed)
    assert done.returncode == 0, done.stderr
    actual = {" ".join(line.split()) for line in done.stdout.splitlines()}
    for line in shown.group(1).splitlines():
        assert " ".join(line.split()) in actual, f"the guide shows a line the command does not print: {line}"


def test_the_tutorial_commands_run(installed: dict[str, object]) -> None:
    commands = [line.strip() for block in re.findall(r"```bash\n(.*?)```", GUIDE, re.S)
                for line in block.splitlines() if line.strip().startswith("gpu-workbench ")]
    estimates = [c for c in commands if c.startswith("gpu-workbench estimate")]
    assert len(estimates) >= 2
    for command in estimates:
        done = _run(command, installed)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        assert "hello" in done.stdout.lower(), command
    assert "hello-margin" in _run(estimates[-1], installed).stdout  # the override trips the warning


def test_the_testing_example_runs(installed: dict[str, object]) -> None:
    code = re.search(r"<!-- run -->\n```python\n(.*?)```", GUIDE, re.S)
    assert code is not None
    done = subprocess.run([sys.executable, "-c", code.group(1)], cwd=installed["project"],  # type: ignore[arg-type]
                          env=installed["env"], capture_output=True, text=True, timeout=120)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr
    assert "hello-margin" in done.stdout


def _array_example() -> type:
    """The guide's array estimator, executed as written."""
    code = next(block for block in re.findall(r"```python\n(.*?)```", GUIDE, re.S) if "estimate_points" in block)
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/plugins.md", "exec"), namespace)  # noqa: S102 - our own guide's example
    return namespace["TokensInFlight"]  # type: ignore[return-value]


def test_the_array_estimator_example_runs_guarded_on_groups_and_single_points() -> None:
    from workbench.api import make_scenario, resolve
    from workbench.engine.pipeline import Engine
    from workbench.pluginhost import PluginHost
    from workbench.pluginhost.guarded import GuardedArrayEstimator, PluginState
    from workbench.pluginhost.host import _checked_estimator

    faults: list[str] = []
    wrapped = _checked_estimator(_array_example()(), PluginState("hello", lambda name, why: faults.append(why)))
    assert isinstance(wrapped, GuardedArrayEstimator)
    engine = Engine([*PluginHost(entry_point_group=None).registry.estimators, wrapped])
    resolved = resolve(make_scenario(model="llama-3.1-8b", gpu="l4"))
    points = {"batch_size": [1, 64, 256], "seq_len": [128, 8192, 32768], "gen_len": [0, 256, 1024]}
    group = engine.run_points(resolved, points)
    for i in range(3):
        alone = group.estimate(i)
        tokens = points["batch_size"][i] * (points["seq_len"][i] + points["gen_len"][i])
        assert alone.get("hello.tokens_in_flight") == tokens and type(alone.get("hello.tokens_in_flight")) is int
        assert alone.values["hello.tokens_in_flight"].formula.endswith(f"= {tokens:,}")
        per_token = alone.get("kv_cache.bytes_per_token")
        big = [w for w in alone.warnings if w.code == "hello.big-cache"]
        assert bool(big) == (tokens * per_token > 0.5 * resolved.cluster.accelerator.memory_bytes)
    codes = [[w.code for w in group.point_warnings(i)] for i in (0, 2)]
    assert "hello.big-cache" not in codes[0] and "hello.big-cache" in codes[1]
    assert faults == []


def test_an_array_estimator_returning_bad_columns_fails_alone() -> None:
    """NaN, a wrong length or a non-Column value is that estimator's failure; the rest still run."""
    import numpy as np

    from workbench.api import make_scenario, resolve
    from workbench.engine.pipeline import Engine
    from workbench.engine.points import PointOutputs, col
    from workbench.pluginhost import PluginHost
    from workbench.pluginhost.guarded import PluginState
    from workbench.pluginhost.host import _checked_estimator

    example = _array_example()
    bad_outputs = {
        "not finite": lambda ctx: PointOutputs({"hello.tokens_in_flight": col(np.full(ctx.n, np.nan))}),
        "values of shape": lambda ctx: PointOutputs({"hello.tokens_in_flight": col(np.zeros(ctx.n + 1))}),
        "not a Column": lambda ctx: PointOutputs({"hello.tokens_in_flight": 3}),
    }
    resolved = resolve(make_scenario(model="llama-3.1-8b", gpu="l4"))
    for message, bad in bad_outputs.items():
        estimator = example()
        estimator.estimate_points = bad
        wrapped = _checked_estimator(estimator, PluginState("hello", lambda name, why: None))
        engine = Engine([*PluginHost(entry_point_group=None).registry.estimators, wrapped])
        group = engine.run_points(resolved, {"batch_size": [1, 2]})
        for i in range(2):
            estimate = group.estimate(i)
            assert [f.estimator for f in estimate.failures] == ["hello.tokens-in-flight"], message
            assert message in estimate.failures[0].message
            assert estimate.get("memory.fits") is True and "hello.tokens_in_flight" not in estimate
