"""Measure what one forward + loss of a transformers model keeps alive for backward.

Used by ``test_activations_vs_torch.py``; no test in this file.

* :func:`saved_activation_bytes`: a ``saved_tensors_hooks`` pack hook sees every tensor an
  autograd node saves; we record its storage (address and size) and a weak reference to the saved
  object. After the forward a storage counts if a node still in the graph holds it (its weak
  reference is alive), so tensors of branches the loss does not reach, freed with them, do not
  count, and a freed address that is reused is not mistaken for the old storage. Storages of
  parameters and buffers are excluded: weights saved for backward are not activations. Under
  gradient checkpointing (non-reentrant) the hook sees the inputs a checkpoint saves, but not the
  keyword arguments (attention mask, RoPE tables) transformers binds into the function it
  recomputes; those are held until backward too, so the tensors in them are recorded the same way.
* :func:`step_peak_bytes`: the PyTorch profiler's allocator events (``profile_memory=True``) over
  one forward + loss + backward, in order; the running sum of their sizes, leaving out the
  allocations that end up as parameter gradients, peaks at the step's activation peak.
"""

from __future__ import annotations

import json
import os
import tempfile
import weakref
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Saved:
    """Unique storages alive for backward after one forward + loss."""

    bytes: int
    storages: int
    block_bytes: int  # of those, the ones first saved while ``block`` ran (0 without ``block``)


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def saved_activation_bytes(
    model: torch.nn.Module, input_ids: torch.Tensor, block: torch.nn.Module | None = None
) -> Saved:
    """Bytes of the unique non-weight storages ``model(ids, labels=ids)`` keeps for backward.

    With ``block`` (a decoder layer), also the bytes of the storages first saved while it ran.
    """
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    weights |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    records: list[tuple[weakref.ref, int, int, bool]] = []
    inside = [False]

    def record(t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in weights:
            records.append((weakref.ref(t), ptr, storage.nbytes(), inside[0]))

    def pack(t: torch.Tensor) -> torch.Tensor:
        record(t)
        return t

    wrapped = []
    for module in model.modules():
        original = getattr(module, "_gradient_checkpointing_func", None)
        if original is None or not getattr(module, "gradient_checkpointing", False):
            continue

        def checkpointed(fn: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            for t in _tensors(args) + _tensors(getattr(fn, "keywords", {})) + _tensors(kwargs):
                record(t)
            return _original(fn, *args, **kwargs)

        module._gradient_checkpointing_func = checkpointed
        wrapped.append((module, original))
    handles = []
    if block is not None:
        handles.append(block.register_forward_pre_hook(lambda *_: inside.__setitem__(0, True)))
        handles.append(block.register_forward_hook(lambda *_: inside.__setitem__(0, False)))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            output = model(input_ids=input_ids, labels=input_ids)
    finally:
        for module, original in wrapped:
            module._gradient_checkpointing_func = original
        for handle in handles:
            handle.remove()
    alive: dict[int, tuple[int, bool]] = {}
    for ref, ptr, nbytes, in_block in records:
        if ref() is not None and ptr not in alive:
            alive[ptr] = (nbytes, in_block)
    del output  # the graph, and everything it saved, goes with it
    total = sum(n for n, _ in alive.values())
    return Saved(total, len(alive), sum(n for n, in_block in alive.values() if in_block))


def step_peak_bytes(model: torch.nn.Module, input_ids: torch.Tensor) -> int:
    """Peak bytes allocated during forward + loss + backward, parameter gradients left out.

    The output is dropped before backward, as transformers' Trainer does (it keeps the loss only).
    """
    from torch.profiler import ProfilerActivity, profile

    model.zero_grad(set_to_none=True)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = model(input_ids=input_ids, labels=input_ids).loss
        loss.backward()
        del loss
    grads = {p.grad.untyped_storage().data_ptr() for p in model.parameters() if p.grad is not None}
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    events = sorted((e for e in trace["traceEvents"] if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    last_alloc: dict[int, int] = {}
    for i, e in enumerate(events):
        if e["args"]["Bytes"] > 0:
            last_alloc[e["args"]["Addr"]] = i
    grad_allocs = {last_alloc[g] for g in grads if g in last_alloc}
    live = peak = 0
    for i, e in enumerate(events):
        if i not in grad_allocs:
            live += e["args"]["Bytes"]
            peak = max(peak, live)
    return peak
