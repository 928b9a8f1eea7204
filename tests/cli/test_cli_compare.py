"""`compare`, `sensitivity` and the new `solve` questions from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_bad_input import assert_one_line_error, run_cli

from workbench.core import Project, Scenario
from workbench.report.exports import parse_csv
from workbench.store import save_project

SERVE = ["--model", "llama-3.1-70b", "--batch", "16"]
# h200-nvl has no rental price in the catalog (price_gaps says why): its row asks for one.
FOUR = ["--gpus-list", "h100-sxm,h200-sxm,h200-nvl,l40s"]


def test_compare_prints_a_ranked_table_with_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", *SERVE, *FOUR, "--max-tpot", "0.05")
    assert code == 0, err
    lines = out.splitlines()
    assert "ranked by $ per million tokens" in lines[0]
    assert lines[1].split()[:4] == ["#", "accelerator", "GPUs", "TTFT"]
    assert lines[2].split()[:2] == ["1", "h100-sxm"]
    assert "recommended: the cheapest that meets the targets" in lines[2]
    assert any("TPOT" in line and "> target 50 ms" in line for line in lines)
    assert any("no price: enter --usd-per-gpu-hour" in line for line in lines)
    assert lines[-1].startswith("recommendation: h100-sxm x ")


def test_compare_json_csv_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "compare", *SERVE, "--gpus-list", "h100-sxm,mi300x@3.2", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "gpu-workbench comparison"
    rows = doc["scenarios"][0]["results"]
    mi = next(r for r in rows if r["accelerator"] == "mi300x")
    assert mi["values"]["usd_per_gpu_hour"] == 3.2
    csv_path, html_path = tmp_path / "c.csv", tmp_path / "c.html"
    code, out, _ = run_cli(
        capsys, "compare", *SERVE, "--gpus-list", "h100-sxm,mi300x@3.2", "--csv", str(csv_path)
    )
    assert code == 0 and f"wrote {csv_path}" in out
    parsed = parse_csv(csv_path.read_text())
    assert [r["accelerator"] for r in parsed] == [r["accelerator"] for r in rows]
    assert [r["usd_per_m_tokens"] for r in parsed] == [r["values"]["usd_per_m_tokens"] for r in rows]
    code, out, _ = run_cli(capsys, "compare", *SERVE, "--gpus-list", "h100-sxm", "--csv", "-")
    assert code == 0 and out.startswith("Scenario,Rank,Accelerator")
    assert run_cli(capsys, "compare", *SERVE, *FOUR, "--html", str(html_path))[0] == 0
    assert html_path.read_text().startswith("<!DOCTYPE html>")


def test_compare_all_candidates(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", "--model", "llama-3.1-8b", "--candidates", "all", "--json")
    assert code == 0, err
    results = json.loads(out)["scenarios"][0]["results"]
    assert len(results) >= 40
    assert results[0]["recommended"]


def test_compare_scenarios_of_a_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.gpuwb"
    save_project(
        Project(
            name="Q3",
            scenarios=(
                Scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=32),
                Scenario(
                    name="tune",
                    model="llama-3.1-8b",
                    gpu="h100-sxm",
                    workload="finetune",
                    method="lora",
                    train_tokens=1e9,
                ),
                Scenario(name="other", model="llama-3.1-8b", gpu="h100-sxm"),
            ),
        ),
        path,
    )
    code, out, err = run_cli(
        capsys,
        "compare",
        "--project",
        str(path),
        "--scenario",
        "chat",
        "--scenario",
        "tune",
        "--gpus-list",
        "h100-sxm,a100-80gb-sxm",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert [s["scenario"] for s in doc["scenarios"]] == ["chat", "tune"]
    assert doc["scenarios"][1]["cost_metric"] == "run_usd"
    assert doc["recommendation"] in ("h100-sxm", "a100-80gb-sxm")
    code, out, _ = run_cli(capsys, "compare", "--project", str(path), "--gpus-list", "h100-sxm")
    assert code == 0 and out.count("recommendation: ") == 3 and "overall: h100-sxm" in out
    assert_one_line_error(
        *run_cli(capsys, "compare", "--project", str(path), "--scenario", "nope", "--gpus-list", "h100-sxm"),
        "no scenario named 'nope'",
    )


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["compare", *SERVE], "--gpus-list"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm,h1000"], "h1000"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm@abc"], "price after @"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm@"], "give a price after @"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm@2/"], "purchase price after /"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm@2/-5"], "price after / must be a positive number"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm@2/inf"], "price after / must be a positive number"),
        (["compare", *SERVE, "--gpus-list", "h100-sxm:no-such-node"], "no-such-node"),
        (["compare", *SERVE, *FOUR, "--max-tpot", "-1"], "--max-tpot"),
        (["compare", *SERVE, *FOUR, "--usd-per-gpu-hour", "2"], "--usd-per-gpu-hour"),
        (["compare", *SERVE, "--scenario", "a.json", "--scenario", "b.json", *FOUR], "--scenario"),
        (
            ["solve", "train-in", "--model", "llama-3.1-8b", "--workload", "pretrain", "--days", "3"],
            "--tokens",
        ),
        (
            ["solve", "train-in", "--model", "llama-3.1-8b", "--tokens", "1e10", "--days", "3"],
            "training scenario",
        ),
        (
            ["solve", "train-in", "--model", "llama-3.1-8b", "--workload", "pretrain", "--tokens", "1e10"],
            "--days",
        ),
        (["solve", "max-batch-tpot", "--model", "llama-3.1-8b"], "--max-tpot"),
        (
            [
                "solve",
                "max-context-tpot",
                "--model",
                "llama-3.1-8b",
                "--workload",
                "pretrain",
                "--max-tpot",
                "0.05",
            ],
            "inference",
        ),
        (["sensitivity", "--model", "llama-3.1-8b", "--metric", "nope.key"], "nope.key"),
    ],
)
def test_mistakes_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    assert_one_line_error(*run_cli(capsys, *argv), needle)


def test_one_price_for_one_candidate(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "compare", *SERVE, "--gpus-list", "h200-sxm", "--usd-per-gpu-hour", "3.5", "--json"
    )
    row = json.loads(out)["scenarios"][0]["results"][0]
    assert code == 0 and row["values"]["usd_per_gpu_hour"] == 3.5 and row["recommended"]
    code, out, _ = run_cli(
        capsys, "compare", *SERVE, *FOUR, "--gpu", "h200-sxm", "--usd-per-gpu-hour", "3.5", "--json"
    )
    rows = {r["accelerator"]: r for r in json.loads(out)["scenarios"][0]["results"]}
    assert rows["h200-sxm"]["values"]["usd_per_gpu_hour"] == 3.5
    assert rows["h100-sxm"]["values"]["usd_per_gpu_hour"] == 2.99


def test_solve_cheapest(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "solve",
        "cheapest",
        *SERVE,
        "--gpus-list",
        "h100-sxm,b200,l40s",
        "--max-tpot",
        "0.03",
        "--min-tokens-per-s",
        "2000",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    answer = doc["answer"]
    assert answer["values"]["tpot_s"] <= 0.03 and answer["values"]["tokens_per_s"] >= 2000
    assert answer["num_gpus"] == answer["tp"] * answer["pp"] * answer["dp"]
    costs = [r["values"]["usd_per_m_tokens"] for r in doc["ranking"] if r["meets_targets"]]
    assert answer["values"]["usd_per_m_tokens"] == min(costs)
    code, out, _ = run_cli(
        capsys, "solve", "cheapest", *SERVE, "--gpus-list", "h100-sxm,b200", "--max-tpot", "0.03"
    )
    assert code == 0 and out.startswith("cheapest: ")


def test_solve_train_in_and_tpot_questions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "solve",
        "train-in",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "pretrain",
        "--zero",
        "1",
        "--batch",
        "4",
        "--tokens",
        "2e10",
        "--days",
        "2",
        "--json",
    )
    assert code == 0, err
    answer = json.loads(out)["answer"]
    assert answer["train_days"] <= 2 and answer["num_gpus"] == answer["tp"] * answer["pp"] * answer["dp"]
    code, out, _ = run_cli(
        capsys,
        "solve",
        "train-in",
        "--model",
        "llama-3.1-8b",
        "--workload",
        "pretrain",
        "--tokens",
        "2e10",
        "--days",
        "2",
    )
    assert code == 0 and out.startswith("train-in: ") and "GPUs" in out
    code, out, _ = run_cli(
        capsys,
        "solve",
        "max-batch-tpot",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "l4",
        "--seq-len",
        "1024",
        "--max-tpot",
        "0.075",
        "--json",
    )
    assert code == 0 and json.loads(out)["answer"]["batch_size"] >= 1
    code, out, _ = run_cli(
        capsys, "solve", "max-context-tpot", "--model", "llama-3.1-8b", "--batch", "32", "--max-tpot", "0.012"
    )
    assert code == 0 and out.startswith("max-context-tpot: seq_len = ")
    # The questions solve had before still work.
    code, out, _ = run_cli(capsys, "solve", "min-gpus", "--model", "llama-3.1-70b", "--json")
    assert code == 0 and json.loads(out)["answer"]["num_gpus"] >= 2


def test_sensitivity_text_json_and_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "sensitivity", "--model", "llama-3.1-70b", "--gpus", "4", "--tp", "4")
    assert code == 0, err
    assert "biggest swing first" in out and "price.rental" in out and "ranges (" in out
    code, out, _ = run_cli(
        capsys, "sensitivity", "--model", "llama-3.1-70b", "--gpus", "4", "--tp", "4", "--json"
    )
    doc = json.loads(out)
    assert doc["metric"] == "cost.usd_per_million_tokens" and doc["bars"]
    code, out, err = run_cli(capsys, "sensitivity", *SERVE, "--gpus-list", "b200,h100-sxm", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["recommendation"] == "b200"
    assert all("recommendation_changes" in b for b in doc["bars"])


def test_solve_help_describes_every_question() -> None:
    """`solve --help` says what each registered question answers (choices come from two modules)."""
    from workbench.cli.main import SOLVE_DESCRIPTION, build_parser

    parser = build_parser()
    solve = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith(" solve"))
    question = next(a for a in solve._actions if a.dest == "question")
    described = {line.split()[0] for line in SOLVE_DESCRIPTION.splitlines()[2:] if line.startswith("  ") and
                 not line.startswith("    ")}
    assert set(question.choices) == described


def test_a_candidate_carries_its_own_rental_and_purchase_prices(capsys) -> None:  # type: ignore[no-untyped-def]
    """``ID@RENT/BUY``: the rental price sets the hourly cost, the purchase price the capex (times
    one plus the server overhead); ``ID@/BUY`` sets the purchase price alone."""
    code, out, err = run_cli(
        capsys, "compare", "--model", "llama-3.1-8b", "--gpus-list", "h100-sxm@2.5/25000,b200@/38000", "--json"
    )
    assert code == 0, err
    rows = {r["accelerator"]: r["values"] for r in json.loads(out)["scenarios"][0]["results"]}
    assert rows["h100-sxm"]["usd_per_gpu_hour"] == 2.5
    assert rows["h100-sxm"]["tco_capex_usd"] == pytest.approx(25000 * 1.5)
    assert rows["b200"]["tco_capex_usd"] == pytest.approx(38000 * 1.5)
    assert rows["b200"]["usd_per_gpu_hour"] != 2.5  # the catalog's rental price stays


def test_compare_says_how_sure_the_recommendation_is(capsys) -> None:  # type: ignore[no-untyped-def]
    """--confidence N: the share of N draws of the documented assumption ranges in which each
    candidate is the recommendation, in the text and in --json (shares and 'none' sum to 1)."""
    argv = ["compare", "--model", "llama-3.1-8b", "--batch", "64", "--gpus-list", "h100-sxm@2,mi300x@2.2"]
    code, out, err = run_cli(capsys, *argv, "--confidence", "200", "--json")
    assert code == 0, err
    conf = json.loads(out)["confidence"]
    assert conf["draws"] == 200 and conf["seed"] == 0
    assert sum(conf["shares"].values()) + conf["no_recommendation"] == pytest.approx(1.0)
    assert {d["id"] for d in conf["drawn"]} >= {"perf.kernel_efficiency_scale", "perf.bandwidth_efficiency_scale"}
    code, out, err = run_cli(capsys, *argv, "--confidence", "200")
    assert code == 0, err
    assert "decision confidence over 200 draws" in out and "of draws" in out
    assert_one_line_error(*run_cli(capsys, *argv, "--confidence", "0"), "--confidence")
    assert_one_line_error(*run_cli(capsys, *argv, "--confidence", "50", "--csv", "-"), "--confidence")


def test_compare_exports_each_candidates_pareto_fronts(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["compare", "--model", "llama-3.1-70b", "--weights", "fp8", "--gen-len", "256", "--gpus-list",
            "h100-sxm,mi300x"]  # fmt: skip
    code, out, err = run_cli(capsys, *argv, "--pareto", "--json")
    assert code == 0, err
    fronts = json.loads(out)["pareto"]["fronts"]
    assert [f["candidate"] for f in fronts] == ["h100-sxm", "mi300x"]
    for f in fronts:
        per_gpu = [p["tokens_per_s_per_gpu"] for p in f["throughput_front"]]
        per_user = [p["tokens_per_s_per_user"] for p in f["throughput_front"]]
        assert per_gpu == sorted(per_gpu, reverse=True) and per_user == sorted(per_user)  # a trade-off curve
    code, out, err = run_cli(capsys, *argv, "--pareto-csv", "-")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("candidate,tp,batch") and len(lines) - 1 == sum(len(f["points"]) for f in fronts)
    code, out, err = run_cli(capsys, *argv, "--pareto")
    assert code == 0 and "Pareto fronts of" in out and "tok/s/user" in out
    assert_one_line_error(
        *run_cli(capsys, "compare", "--model", "llama-3.1-8b", "--workload", "pretrain", "--gpus-list", "h100-sxm",
                 "--pareto"),  # fmt: skip
        "serving",
    )


def test_compare_at_equal_service_level(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["compare", "--model", "llama-3.1-70b", "--gen-len", "256", "--seq-len", "1024", "--gpus-list",
            "h100-sxm,mi300x,l40s", "--max-ttft", "1", "--max-tpot", "0.05", "--min-tokens-per-s", "5000",
            "--iso-sla", "--weights-options", "bf16,fp8"]  # fmt: skip
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert [r["rank"] for r in results] == [1, 2, 3]
    for r in results:
        if r["meets_targets"]:
            best = r["best"]
            assert best["ttft_s"] <= 1 and best["tpot_s"] <= 0.05 and best["tokens_per_s"] >= 5000
            assert best["weights"] in ("bf16", "fp8")
        else:
            assert r["reason"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and "at equal service level" in out
    assert_one_line_error(*run_cli(capsys, *argv[:-1], "bf16,zz"), "weights")


def test_compare_at_equal_service_level_with_confidence(capsys) -> None:  # type: ignore[no-untyped-def]
    argv = ["compare", "--model", "llama-3.1-70b", "--gen-len", "256", "--seq-len", "1024", "--gpus-list",
            "h100-sxm,mi300x,b200", "--max-tpot", "0.05", "--iso-sla", "--weights-options", "bf16,fp8",
            "--confidence", "40"]  # fmt: skip
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    doc = json.loads(out)
    conf = doc["confidence"]
    assert conf["draws"] == 40 and conf["drawn"]
    assert sum(conf["shares"].values()) + conf["no_recommendation"] == pytest.approx(1.0)
    assert set(conf["shares"]) == {r["candidate"] for r in doc["results"]}
    for b in conf["break_even"]:
        assert b["low"] <= b["threshold"] <= b["high"] and b["direction"] in ("at least", "at most")
    losers = [r for r in doc["results"][1:] if r["meets_targets"]]
    assert all(r["break_even_usd_per_gpu_hour"] > 0 for r in losers)
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "confidence at equal service level over 40 draws" in out and "of draws" in out
    assert all(f"{b['winner']} wins if {b['assumption']}" in out for b in conf["break_even"])
    assert_one_line_error(*run_cli(capsys, *argv, "--csv", "-"), "--iso-sla")
    plain = [a for a in argv if a not in ("--iso-sla", "--weights-options", "bf16,fp8")]
    assert_one_line_error(*run_cli(capsys, *plain, "--confidence-tails", "drawn"), "--confidence-tails")
