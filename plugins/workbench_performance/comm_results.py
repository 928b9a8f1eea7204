"""Communication results: the ``communication.*`` keys (one decode step or one optimizer step)."""

from __future__ import annotations

from workbench.engine.estimator import EstimateContext
from workbench.engine.quantity import Outputs, Quantity, q
from workbench_performance import efficiency as E
from workbench_performance.communication import forward_comm, gradient_sync
from workbench_performance.inputs import Source, comm_layout, training_inputs
from workbench_performance.text import g, lazy


def communication_outputs(ctx: EstimateContext) -> Outputs:
    """Volume and time of each kind of collective for one step of the scenario."""
    sc = ctx.scenario
    training = sc.is_training
    central, _, _ = E.efficiencies(ctx.assumptions, training=training)
    src = Source.of(ctx)
    layout = comm_layout(src)
    used = (E.LINK, E.ALPHA_INTRA, E.ALPHA_INTER)
    v: dict[str, Quantity] = {}
    par = sc.parallel
    if training:
        inp = training_inputs(src)
        m = inp.microbatches
        one = forward_comm(layout, inp.tokens_mb, central)
        passes = inp.tp_passes
        step = f"one optimizer step ({m} micro-batches of {inp.tokens_mb:,.0f} tokens)"
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
    else:
        tokens = max(sc.batch_size / par.pp, 1.0) if par.pp > 1 else float(sc.batch_size)
        one = forward_comm(layout, tokens, central)
        step = f"one decode step (batch {sc.batch_size})"
        tp = (one.tp_s, one.tp_bytes * par.pp)
        ep = (one.ep_s, one.ep_bytes * par.pp)
        pp = (one.pp_s, one.pp_bytes * par.pp)
        dp = (0.0, 0.0)
        dp_text = "replicas serve independently: no data-parallel traffic"
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
    for group, (seconds, nbytes) in (("tp", tp), ("dp", dp), ("pp", pp), ("ep", ep)):
        link = links[group]
        active = sizes[group] > 1
        text = texts[group]
        v[f"communication.{group}.bytes_per_step"] = q(
            nbytes if active else 0.0, "B", f"{group.upper()} bytes sent per GPU", lazy(text), used
        )
        v[f"communication.{group}.time_s"] = q(
            seconds if active else 0.0,
            "s",
            f"{group.upper()} communication time",
            lazy(f"{text}; alpha-beta model, {link.describe()}"),
            used,
        )
        v[f"communication.{group}.link"] = q(
            link.describe() if active else "none",
            "",
            f"{group.upper()} link",
            lazy(f"group of {sizes[group]}"),
        )
    total = sum(x[0] for x, n in ((tp, par.tp), (dp, sizes["dp"]), (pp, par.pp), (ep, sizes["ep"])) if n > 1)
    v["communication.step"] = q(step, "", "Step the communication figures are for")
    v["communication.total_s"] = q(
        total,
        "s",
        "Communication time per step (before overlap)",
        lambda: f"TP + DP + PP + EP = {total:.4g} s",
        used,
    )
    return Outputs(v, [])
