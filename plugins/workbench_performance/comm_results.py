"""Communication results: the ``communication.*`` keys (one decode step or one optimizer step)."""

from __future__ import annotations

import numpy as np

from workbench.core.scenario import Parallelism
from workbench.engine.points import Column, PointOutputs, PointsContext, at, column_for
from workbench_performance import efficiency as E
from workbench_performance.arrays import as_float, maximum
from workbench_performance.communication import CommLayout, forward_comm, gradient_sync
from workbench_performance.inputs import TRAINING_NUMBERS, PointSource, comm_layout, training_inputs
from workbench_performance.text import g


def communication_columns(ctx: PointsContext) -> PointOutputs:
    """Volume and time of each kind of collective over a point group: one optimizer step of a
    training scenario, one decode step of a serving one (the batch and lengths vary per point)."""
    if ctx.scenario.is_training:
        src = PointSource.of(ctx, TRAINING_NUMBERS)
        if ctx.n == 1:
            return _training(src)
        with np.errstate(divide="raise", invalid="raise", over="ignore"):  # as a single estimate (see training_columns)
            return _training(src)
    return _serving(ctx)


def _training(src: PointSource) -> PointOutputs:
    sc, n = src.scenario, src.n
    central, _, _ = E.efficiencies(src.assumptions, training=True)
    layout = comm_layout(src)
    par = sc.parallel
    inp = training_inputs(src)
    m = inp.microbatches
    one = forward_comm(layout, inp.tokens_mb, central)
    passes = inp.tp_passes
    if n == 1:
        step: object = _step_text(m, inp.tokens_mb)
    else:
        counts = m.tolist() if isinstance(m, np.ndarray) else [m] * n  # one count for all without a global batch
        step = np.array([_step_text(*point) for point in zip(counts, inp.tokens_mb.tolist())], dtype=object)
    tp = (one.tp_s / par.pp * passes * m, one.tp_bytes * passes * m)
    ep = (one.ep_s / par.pp * passes * m, one.ep_bytes * passes * m)
    sends = 2.0 * m * (par.virtual_stages if inp.virtual_stages > 1 else 1)
    pp = (one.pp_s / max(par.pp - 1, 1) * sends if par.pp > 1 else 0.0, one.pp_bytes * sends)
    dp = gradient_sync(layout, inp.grad_bytes, par.zero_stage, central)
    dp_text = (
        f"gradients {g(inp.grad_bytes)} B per GPU, "
        + (
            "ring all-reduce 2(n-1)/n"
            if par.zero_stage == 0
            else "reduce-scatter + all-gather"
            + (" + ZeRO-3 parameter gathers (1.5x)" if par.zero_stage >= 3 else "")
        )
        + f" over DP {par.dp}"
    )
    return _columns(n, _figures(layout, par, True, tp, dp, pp, ep, dp_text), step)


def _step_text(microbatches: int, tokens: float) -> str:
    return f"one optimizer step ({microbatches} micro-batches of {tokens:,.0f} tokens)"


def _serving(ctx: PointsContext) -> PointOutputs:
    sc = ctx.scenario
    central, _, _ = E.efficiencies(ctx.assumptions, training=False)
    layout = comm_layout(ctx)
    par = sc.parallel
    batch = int(ctx.points["batch_size"][0]) if ctx.n == 1 else ctx.points["batch_size"]
    tokens = maximum(batch / par.pp, 1.0) if par.pp > 1 else as_float(batch)
    steps = [f"one decode step (batch {b})" for b in np.ravel(batch).tolist()]
    step: object = steps[0] if ctx.n == 1 else np.array(steps, dtype=object)
    one = forward_comm(layout, tokens, central)
    tp = (one.tp_s, one.tp_bytes * par.pp)
    ep = (one.ep_s, one.ep_bytes * par.pp)
    pp = (one.pp_s, one.pp_bytes * par.pp)
    dp = (0.0, 0.0)
    dp_text = "replicas serve independently: no data-parallel traffic"
    return _columns(ctx.n, _figures(layout, par, False, tp, dp, pp, ep, dp_text), step)


def _columns(n: int, parts: dict[str, Figure], step: object) -> PointOutputs:
    """The keys of a group of ``n`` points from its figures and the step they are for."""
    total = parts.pop(_TOTAL)[0]
    v: dict[str, Column] = {}
    for key, (value, unit, label, formula, used) in parts.items():
        v[key] = column_for(n, value, unit, label, formula, used)
    v["communication.step"] = column_for(n, step, "", "Step the communication figures are for")
    v[_TOTAL] = column_for(n, total, "s", _TOTAL_LABEL, lambda i: f"TP + DP + PP + EP = {at(total, i):.4g} s", _USED)
    return PointOutputs(v, [])


_USED = (E.LINK, E.ALPHA_INTRA, E.ALPHA_INTER)
_TOTAL = "communication.total_s"
_TOTAL_LABEL = "Communication time per step (before overlap)"
Figure = tuple[object, str, str, str, tuple[str, ...]]  # value, unit, label, formula, assumptions


def _figures(
    layout: CommLayout, par: Parallelism, training: bool, tp: tuple, dp: tuple, pp: tuple, ep: tuple, dp_text: str
) -> dict[str, Figure]:
    """Bytes, time and link of each group (numbers, or arrays over a point group), and their total
    (under ``communication.total_s``, without its formula)."""
    msg = f"{layout.hidden} hidden x {layout.act_bytes:g} B per token"
    links = {"tp": layout.tp_link, "dp": layout.dp_link, "pp": layout.pp_link, "ep": layout.ep_link}
    sizes = {
        "tp": par.tp,
        "dp": par.dp if training else 1,
        "pp": par.pp,
        "ep": par.ep if layout.moe_layers else 1,
    }
    tp_kind = "reduce-scatter + all-gather pairs" if layout.sequence_parallel else "all-reduces"
    texts = {
        "tp": f"{layout.tp_collectives} {tp_kind} per forward pass of {msg} over TP {par.tp}",
        "dp": dp_text,
        "pp": f"activations forward and gradients backward between {par.pp} stages ({msg})",
        "ep": f"dispatch + combine all-to-all per MoE layer ({layout.moe_layers}) x top-{layout.top_k} "
        f"over EP {par.ep}",
    }
    out: dict[str, Figure] = {}
    for group, (seconds, nbytes) in (("tp", tp), ("dp", dp), ("pp", pp), ("ep", ep)):
        link = links[group]
        active = sizes[group] > 1
        text = texts[group]
        out[f"communication.{group}.bytes_per_step"] = (
            nbytes if active else 0.0, "B", f"{group.upper()} bytes sent per GPU", text, _USED
        )
        out[f"communication.{group}.time_s"] = (
            seconds if active else 0.0,
            "s",
            f"{group.upper()} communication time",
            f"{text}; alpha-beta model, {link.describe()}",
            _USED,
        )
        out[f"communication.{group}.link"] = (
            link.describe() if active else "none", "", f"{group.upper()} link", f"group of {sizes[group]}", ()
        )
    out[_TOTAL] = (
        sum(x[0] for x, n in ((tp, par.tp), (dp, sizes["dp"]), (pp, par.pp), (ep, sizes["ep"])) if n > 1),
        "s", _TOTAL_LABEL, "", _USED,
    )  # fmt: skip
    return out
