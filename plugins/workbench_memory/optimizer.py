"""Gradient and optimizer-state bytes per trainable parameter.

Mixed precision (bf16/fp16/fp8 compute with ``master_weights``) keeps an fp32 master copy of
every trainable weight in the optimizer: 4 bytes. fp32 training updates the weights in place and
has no master copy. Per trainable parameter, on top of the master copy:

* AdamW: fp32 first and second moments, 4 + 4 = 8 bytes; with the master copy 12, the ZeRO
  paper's K = 12 (Rajbhandari et al. 2020, Sec. 3.1) and "Transformer Math 101" (EleutherAI
  2023): 2 (weights) + 2 (gradients) + 12 = 16 bytes per parameter.
* AdamW 8-bit (bitsandbytes, Dettmers et al. 2022, "8-bit Optimizers via Block-wise
  Quantization"): both moments in 8 bits, 2 bytes, plus one fp32 absmax per 2048-value block of
  each state.
* SGD with momentum: one fp32 momentum buffer, 4 bytes.
* Adafactor (Shazeer & Stern 2018): a factored second moment, ``rows + cols`` fp32 values per
  matrix and a full one per vector (counted per element in :mod:`workbench_memory.shapes`), plus
  an optional first moment (assumption ``memory.adafactor_momentum_bytes``).

Gradients are kept in the compute precision (2 bytes; 4 for fp32), as Megatron-LM and DeepSpeed
do by default with bf16; fp8 training (Transformer Engine) still produces 16-bit gradients.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.dtypes import DType
from workbench.core.scenario import Optimizer, Scenario

#: bitsandbytes blockwise quantization of optimizer states: values per fp32 absmax.
BNB_BLOCK = 2048


@dataclass(frozen=True, slots=True)
class TrainingBytes:
    """Bytes per trainable parameter (and per Adafactor factored element)."""

    grad: float
    master: float
    states: float
    factored: float  # per Adafactor row/column statistic (0 for other optimizers)
    optimizer: Optimizer

    @property
    def per_param(self) -> float:
        """Optimizer bytes per trainable parameter, master copy included."""
        return self.master + self.states

    def describe(self) -> str:
        master = f"{self.master:g} (fp32 master) + " if self.master else ""
        extra = " + 4 B per factored row/column statistic" if self.factored else ""
        return f"{self.optimizer.value}: {master}{self.states:g} (states) = {self.per_param:g} B/param{extra}"


def training_bytes(scenario: Scenario, adafactor_momentum: float) -> TrainingBytes:
    fp32 = scenario.dtype is DType.FP32
    key = (fp32, scenario.master_weights, scenario.optimizer, adafactor_momentum)
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) > 256:
            _CACHE.clear()
        found = _CACHE[key] = _training_bytes(*key)
    return found


#: Answers by (fp32, master weights, optimizer, Adafactor momentum bytes): a few dozen at most.
_CACHE: dict[tuple[object, ...], TrainingBytes] = {}


def _training_bytes(
    fp32: bool, master_weights: bool, opt: Optimizer, adafactor_momentum: float
) -> TrainingBytes:
    grad = 4.0 if fp32 else 2.0
    master = 4.0 if (master_weights and not fp32) else 0.0
    factored = 0.0
    if opt is Optimizer.ADAMW:
        states = 8.0
    elif opt is Optimizer.ADAMW_8BIT:
        states = 2.0 + 2 * 4.0 / BNB_BLOCK
    elif opt is Optimizer.SGD_MOMENTUM:
        states = 4.0
    else:
        states, factored = adafactor_momentum, 4.0
    return TrainingBytes(grad, master, states, factored, opt)
