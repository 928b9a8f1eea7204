"""Every recurrent mixer kind gets a FLOP, state and activation figure (none raises), so a family
reader that fills the fields is costed by the engine whatever its kind."""

from __future__ import annotations

import pytest
from workbench_compute.recurrent import scan_backward_flops, scan_flops, step_flops
from workbench_memory.recurrent_activations import mixer_bytes

from workbench.core.model import RecurrentKind, RecurrentMixer


@pytest.mark.parametrize("kind", list(RecurrentKind))
def test_every_kind_is_costed(kind: RecurrentKind) -> None:
    m = RecurrentMixer(kind=kind, projections=((64, 256), (128, 64)), heads=4, head_dim=32, state_size=16,
                       conv_channels=160, conv_kernel=4, chunk_size=64, conv_state_elements=640,
                       ssm_state_elements=2048)  # fmt: skip
    assert scan_flops(m, 100) > 0
    assert scan_backward_flops(m, 100) >= scan_flops(m, 100)
    assert step_flops(m) > 0
    short, long = mixer_bytes(m, 2, 100, 2.0), mixer_bytes(m, 2, 1000, 2.0)
    assert 0 < short < long
