"""Iteration-level serving simulator: many configurations' request streams as numpy arrays.

    from workbench_performance.simulator import Policy, StepModel, arrivals, simulate
    rng = np.random.default_rng(0)
    load = arrivals.poisson(rng, rate=8.0, prompt_tokens=prompts, output_tokens=outputs)
    result = simulate(StepModel(overhead_s=..., prefill_token_s=..., decode_seq_s=...,
                                context_token_s=...), Policy("chunked", max_batch=256), load)
    result.summary(slo_ttft_s=2.0, slo_tpot_s=0.1)["ttft_p99_s"]   # one value per configuration

The step-time coefficients are arrays per configuration, so a per-operator model (or any
other) supplies them without the simulator knowing how they were made. The performance
estimator's ``performance.sim.*`` keys come from it (workbench_performance.serving_simulation).
"""

from workbench_performance.simulator import arrivals
from workbench_performance.simulator.inputs import Policy, StepModel, Workload
from workbench_performance.simulator.loop import simulate
from workbench_performance.simulator.metrics import SimulationResult

__all__ = ["Policy", "SimulationResult", "StepModel", "Workload", "arrivals", "simulate"]
