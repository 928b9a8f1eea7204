"""Checkpoints (size from the plan's own shards, write, restore and stall times, the interval) and the
run they protect: interruptions, lost work, goodput and the goodput-adjusted days and cost."""

from __future__ import annotations

import math

import numpy as np

from workbench.core.scenario import FinetuneMethod, Scenario, Workload
from workbench.engine.points import PointsContext, at
from workbench_cluster import assumptions as A
from workbench_cluster import formulas as F
from workbench_cluster.columns import NAN, Formula, Out, bytes_text, choose, figure, isnan, larger, nowhere, plain
from workbench_cluster.formulas import Floats
from workbench_cluster.keys import CLUSTER

_TRAINING_ONLY = tuple(k for k, v in CLUSTER.items() if v[1] == "training")
_CHECKPOINT_AND_RUN = tuple(k for k in _TRAINING_ONLY if k.startswith(("cluster.checkpoint.", "cluster.failures.",
                                                                      "cluster.goodput")))  # fmt: skip
_RUN_KEYS = ("cluster.failures.expected_interruptions", "cluster.goodput", "cluster.goodput_days",
             "cluster.goodput_usd")  # fmt: skip


def checkpoint_and_goodput(ctx: PointsContext, out: Out, sc: Scenario, bw: Bandwidth, nodes: int) -> None:
    p = sc.parallel
    weights = figure(ctx, "memory.average_gpu.weights")
    optimizer = figure(ctx, "memory.average_gpu.optimizer_states")
    no_state = "the memory plugin gave no weights or optimizer states per GPU"
    if nowhere(weights) or nowhere(optimizer):
        out.null(_CHECKPOINT_AND_RUN, no_state)
        return
    ranks = p.world_size
    wc = 1 if p.zero_stage >= 3 else p.dp
    oc = 1 if p.zero_stage >= 1 else p.dp
    if sc.workload is Workload.FINETUNE and sc.method is not FinetuneMethod.FULL:
        # The frozen base weights are not saved: the adapters' fp32 master copy is in the optimizer states.
        size = F.checkpoint_bytes(0.0, optimizer, ranks, p.dp, p.zero_stage)

        def size_text(i: int) -> str:
            return (f"{sc.method.value}: optimizer states {bytes_text(at(optimizer, i))} per GPU x {ranks:,} GPUs / "
                    f"{oc:,} copies (frozen base weights not saved)")  # fmt: skip
    else:
        size = F.checkpoint_bytes(weights, optimizer, ranks, p.dp, p.zero_stage)

        def size_text(i: int) -> str:
            return (f"weights {bytes_text(at(weights, i))} x {ranks:,} GPUs / {wc:,} copies + optimizer states "
                    f"{bytes_text(at(optimizer, i))} x {ranks:,} GPUs / {oc:,} copies (ZeRO {p.zero_stage}, DP {p.dp})")

    note = "with EP, expert shards on different EP ranks are distinct: the size is a lower bound" if p.ep > 1 else ""
    out.put("cluster.checkpoint.bytes", size, size_text, (), note, no_state)
    write_s = size / (bw.write * F.GB)
    read_s = size / (bw.read * F.GB)
    out.put("cluster.checkpoint.write_s", write_s,
            lambda i: f"{bytes_text(at(size, i))} / {bw.write:,.4g} GB/s ({bw.how})", why=no_state)  # fmt: skip
    out.put("cluster.checkpoint.read_s", read_s,
            lambda i: f"{bytes_text(at(size, i))} / {bw.read:,.4g} GB/s ({bw.how})", why=no_state)  # fmt: skip
    if sc.cluster.async_checkpoint:
        copy = ctx.assumptions[A.HOST_COPY_GBPS.id]
        shard = size / ranks
        stall = shard / (copy * F.GB)
        out.put("cluster.checkpoint.stall_s", stall,
                lambda i: f"asynchronous: {bytes_text(at(shard, i))} per GPU / {copy:g} GB/s to host",
                (A.HOST_COPY_GBPS.id,), why=no_state)  # fmt: skip
    else:
        stall = write_s
        out.put("cluster.checkpoint.stall_s", stall, lambda i: f"synchronous: the write, {at(write_s, i):.4g} s",
                why=no_state)  # fmt: skip

    rate = ctx.assumptions[A.FAILURE_RATE.id]
    restart = ctx.assumptions[A.RESTART_S.id]
    per_hour = rate * sc.num_gpus
    ids: tuple[str, ...] = (A.FAILURE_RATE.id,)
    mtbf_text = f"1 / ({rate:.4g} per GPU-h x {sc.num_gpus:,} GPUs"
    if sc.cluster.spot:
        preempt = ctx.assumptions[A.SPOT_PREEMPTIONS.id]
        per_hour += preempt * nodes
        mtbf_text += f" + {preempt:.3g} preemptions per node-h x {nodes:,} nodes"
        ids += (A.SPOT_PREEMPTIONS.id,)
    mtbf_h = 1.0 / per_hour if per_hour > 0 else math.inf
    mtbf_s = mtbf_h * 3600.0
    out.put("cluster.failures.per_gpu_hour", rate, f"assumption {A.FAILURE_RATE.id}", (A.FAILURE_RATE.id,))
    out.put("cluster.failures.mtbf_h", mtbf_h if math.isfinite(mtbf_h) else NAN, mtbf_text + ")", ids,
            why="no failures assumed")  # fmt: skip
    user = sc.cluster.checkpoint_interval_s
    if user is not None:
        interval: Floats = user + 0.0 * size  # the size's shape: NaN where it has no value
        interval_text: Formula | str = f"scenario checkpoint_interval_s {user:g}"
    elif math.isfinite(mtbf_s):
        optimum = F.young_daly_interval_s(mtbf_s, stall)
        interval = larger(optimum, write_s) if sc.cluster.async_checkpoint else optimum

        def optimum_text(i: int) -> str:
            shown = f"Young/Daly: sqrt(2 x MTBF {mtbf_s:,.0f} s x stall {at(stall, i):.4g} s)"
            if sc.cluster.async_checkpoint and at(optimum, i) < at(write_s, i):
                shown += f", at least the background write {at(write_s, i):.4g} s"
            return shown

        interval_text = optimum_text
    else:
        interval = NAN
        interval_text = "no failures assumed: no checkpoint needed for recovery"
    out.put("cluster.checkpoint.interval_s", plain(interval), interval_text, ids,
            why="no failures assumed: no checkpoint needed for recovery" if not math.isfinite(mtbf_s) else no_state)  # fmt: skip
    lost = interval / 2.0 + restart + read_s
    out.put("cluster.failures.lost_per_failure_s", plain(lost),
            lambda i: f"interval {at(interval, i):,.4g} s / 2 + restart {restart:g} s + restore {at(read_s, i):.4g} s",
            (A.RESTART_S.id,), why="no checkpoint interval")  # fmt: skip
    useful = figure(ctx, "performance.train_time_s")
    if nowhere(useful):
        out.null(_RUN_KEYS, "set --train-tokens to estimate a run")
        return
    if math.isfinite(mtbf_s):
        g = F.goodput(useful, mtbf_s, interval, stall, restart, read_s)
    else:  # no failures, no checkpoints: the run's own length
        g = F.Goodput(useful, useful / useful, useful * 0.0, lost)
    run_ids = (*ids, A.RESTART_S.id)
    never = g.goodput <= 0.0
    ever = not (never.any() if isinstance(never, np.ndarray) else never)
    no_run = "set --train-tokens to estimate a run"

    def wall_text(i: int) -> str:
        return (f"useful {at(useful, i) / 86400:,.2f} days x (1 + stall {at(stall, i):.3g} s / interval "
                f"{at(interval, i):,.4g} s) / (1 - lost {at(lost, i):,.4g} s / MTBF {mtbf_s:,.0f} s)")

    out.put("cluster.failures.expected_interruptions", choose(never, NAN, g.interruptions),
            lambda i: f"wall {at(g.wall_s, i) / 3600:,.1f} h / MTBF {mtbf_h:.4g} h", run_ids, why=no_run)  # fmt: skip
    share = choose(never, NAN, g.goodput)
    never_why = "the run never finishes: each interruption loses more time than passes between interruptions"
    out.put("cluster.goodput", share, lambda i: f"useful / wall: {wall_text(i)}", run_ids,
            why=no_run if ever else never_why)  # fmt: skip
    out.put("cluster.goodput_days", choose(never, NAN, g.wall_s / 86400.0), wall_text, run_ids,
            why=no_run if ever else never_why)  # fmt: skip
    cost = figure(ctx, "cost.total_usd")
    factor, cost_ids, spot_text = 1.0, run_ids, ""
    if sc.cluster.spot:
        gpu = ctx.gpu
        if sc.pricing.cloud_usd_per_gpu_hour is None and gpu.cloud_spot_usd_per_hour and gpu.cloud_usd_per_hour:
            # the catalog's own dated spot quote for this accelerator, against the on-demand one costed
            factor = gpu.cloud_spot_usd_per_hour / gpu.cloud_usd_per_hour
            spot_text = f" x catalog spot/on-demand {gpu.cloud_spot_usd_per_hour:g}/{gpu.cloud_usd_per_hour:g}"
        else:
            discount = ctx.assumptions[A.SPOT_DISCOUNT.id]
            factor, cost_ids = 1.0 - discount, (*run_ids, A.SPOT_DISCOUNT.id)
            spot_text = f" x (1 - spot discount {discount:g})"
    usd = cost / share * factor
    out.put("cluster.goodput_usd", usd, lambda i: f"${at(cost, i):,.0f} / goodput {at(share, i):.4g}{spot_text}",
            cost_ids, why="no rental cost (see cost.total_usd), or no goodput")  # fmt: skip
    out.warn(never & ~isnan(useful) if isinstance(never, np.ndarray) else never and not isnan(useful), "no-progress",
             lambda i: (f"Interruptions come every {mtbf_s / 60:,.0f} minutes and each loses {at(lost, i) / 60:,.0f}: "
                        "the run never finishes"), "error",
             "shorter restarts, asynchronous checkpoints (--async-checkpoint), or faster storage")  # fmt: skip
    out.warn((share < 0.8) & ~never, "low-goodput",
             lambda i: (f"Only {at(share, i):.0%} of the wall-clock time trains: {at(g.interruptions, i):,.0f} "
                        f"interruptions, {at(lost, i) / 60:,.0f} minutes lost each"), "warning",
             f"asynchronous checkpoints (--async-checkpoint), faster restarts (--set {A.RESTART_S.id}=...), or "
             "faster storage")  # fmt: skip
