"""Shared helpers for rlx's synthetic test models and the numpy reference forward pass.

Standard library + numpy only.

  gguf         GGUF v3 reader and writer (metadata, tensor table, aligned data)
  safetensors  safetensors reader and writer
  ggml_types   ggml type ids, block sizes and bytes per block
  quantize     float32 -> ggml blocks (vectorized numpy quantizers, one function per type)
  dequantize   ggml blocks -> float64, written from ggml's block layouts (one function per type)
  io           atomic file writes

The quantizers and the dequantizers are separate code on purpose: the reference only ever
uses `dequantize`, which follows ggml's layouts, so a packing mistake in `quantize` shows up
as wrong logits instead of cancelling out.
"""
