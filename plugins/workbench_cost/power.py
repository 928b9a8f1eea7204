"""Power draw and the assumptions behind it.

    GPU power      = TDP x (idle + (1 - idle) x utilization)
    facility power = GPU power x (1 + host share) x PUE

``utilization`` is the performance plugin's ``performance.gpu_utilization``: the share of time the
GPUs run kernels (compute- or memory-bound). A busy GPU is taken to draw its TDP; that
overestimates memory-bound decode somewhat (see docs/validation.md, limitations).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.engine.assumptions import Assumption

IDLE = "cost.idle_power_fraction"
HOST = "cost.host_power_fraction"

ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        IDLE,
        "Idle GPU power as a fraction of TDP",
        0.15,
        "fraction",
        "Google Cloud TPU v4 documentation: measured min/mean/max power 90/170/192 W per chip (idle-like "
        "floor near half of the maximum for that chip); H100/H200 SXM report about 70-100 W idle in "
        "nvidia-smi "
        "against a 700 W limit (10-15%). Rule of thumb, not a datasheet figure; range 0.10-0.30.",
        "Power a GPU draws while allocated but not running kernels (pipeline bubbles, waiting on the "
        "network, "
        "idle hours of owned hardware).",
        0.0,
        1.0,
    ),
    Assumption(
        HOST,
        "Server power besides the GPUs, as a fraction of GPU power",
        0.5,
        "fraction",
        "NVIDIA DGX H100 datasheet: about 10.2 kW maximum system power for eight 700 W GPUs (5.6 kW): CPUs, "
        "memory, NICs, NVSwitches, fans and power-supply losses add up to ~0.8 x GPU power at peak and less "
        "on average. 0.5 is this workbench's typical-load choice; range 0.3-0.8. PUE (scenario.pricing.pue) "
        "covers the data centre around the servers.",
        "Set 0 to count GPU power only.",
        0.0,
        5.0,
    ),
)


#: A float, or a float64 array with one entry per point of a group.
Watts = Any


def gpu_watts(tdp: float, idle: float, utilization: Watts) -> Watts:
    """GPU power at ``utilization`` (clipped to 0..1): a float for a float, an array for an array."""
    if isinstance(utilization, np.ndarray):
        u = np.minimum(np.maximum(utilization, 0.0), 1.0)  # NaN stays NaN, as min/max leave it
    else:
        u = min(max(utilization, 0.0), 1.0)
    return tdp * (idle + (1.0 - idle) * u)


def facility_watts(gpu_w: Watts, host: float, pue: float) -> Watts:
    return gpu_w * (1.0 + host) * pue
