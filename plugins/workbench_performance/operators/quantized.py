"""Weight-only quantized matmuls (GGUF k-quants, int4 AWQ/GPTQ, NF4, MLX 4/8-bit) at few rows.

Such a kernel reads the packed weights once and dequantizes them in registers; the math runs
in 16 bits. Two paths, as the engine dispatches them:

* **GEMV path** (GGUF weights, llama.cpp), up to :data:`GEMV_MAX_ROWS` token rows: dot products
  on the vector (CUDA) cores, every weight unpacked and scaled once per row. llama.cpp's
  ``mul_mat_vec_q`` serves up to 8 rows (``MMVQ_MAX_BATCH_SIZE`` in ggml-org/llama.cpp
  ggml/src/ggml-cuda/mmvq.cuh); its compute is :data:`GEMV_FLOPS_PER_WEIGHT_ROW` vector-core
  FLOPs per weight and row. (Engines serving AWQ/GPTQ/NF4/MLX weights are costed on the
  tensor-core path at every row count: their kernels, Marlin's among them, pad to 16 rows.)
* **Tensor-core path**: a GEMM with the dequantization in the main loop, padded to a
  :data:`QUANT_TILE_M`-row tile (the M of the mma.m16n8k16 instruction; Marlin's and llama.cpp
  MMQ's smallest row tile), not to the 64-row tile of a dense 16-bit GEMM.

At one row both are far below the weight bytes' streaming time, so a batch-1 decode step is
bound by bytes / achieved bandwidth plus kernel launch terms: fewer bits per weight, less time.
"""

from __future__ import annotations

#: Token rows up to which the GEMV path runs (llama.cpp ggml-cuda/mmvq.cuh MMVQ_MAX_BATCH_SIZE).
GEMV_MAX_ROWS = 8.0

#: Rows of the smallest tensor-core tile a dequantizing GEMM pads to (mma.m16n8k16).
QUANT_TILE_M = 16.0

#: Vector-core FLOPs per weight element and token row of the GEMV path: unpacking the packed
#: bits, the int8 dot product and the per-block scale. Fitted once (least squares in log
#: tokens/s, steps of 0.25) on the fit part of tests/data/llamacpp_speed: RTX 3090, llama 8B
#: Q4_0, micro-batches 1-8 (ggml-org/llama.cpp pull request 15802), where the time per pass
#: grows from 6.4 ms at 1 row to 13.7 ms at 8 rows with the weight bytes unchanged, which no
#: bandwidth term explains. Only passes of 2-8 rows of GGUF weights depend on it.
GEMV_FLOPS_PER_WEIGHT_ROW = 7.0
