// The cuda backend's kernels as host-callable launchers: each takes device pointers, shapes and
// the stream, and enqueues its kernel(s) (nothing synchronizes). Implemented in kernels/*.cu,
// the only files nvcc / hipcc compile; program.cpp maps graph nodes onto these calls.
//
// Shapes follow ops.def; every tensor is dense row-major f32 unless said otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../gpu.h"

namespace rlx::gpu {

// Where a kernel reports a run-time error (a bad id or position): p[0] = node + 1 (the first
// error wins), p[1] = the offending value. The program zeroes it before each run and reads it
// after.
struct ErrWord {
  uint32_t* p;
  uint32_t node;
};

// What the launchers need to know about the device.
struct Caps {
  int warp = 32;              // warp / wavefront width of the device
  int sm_count = 1;           // multiprocessors, for grid sizing
  bool tensor_cores = false;  // wmma f16 tiles (CUDA sm_70+); else the SIMT GEMM
  bool int8_act = true;       // quantized weights: x as int8 blocks + dp4a (false: exact f32 x)
};

// The weight dtypes matmul and embed read in place (both through quant.cuh): f32, f16, bf16
// and the GGUF block types q4_0 .. q6_k (not q8_k). Defined in matmul.cu.
bool weight_supported(uint32_t dtype);

// ---- elementwise.cu -----------------------------------------------------------------------
// b broadcast: b has nb elements and out[i] = a[i] op b[i % nb] (nb == n: same shape).
void add(const float* a, const float* b, float* out, int64_t n, int64_t nb, cudaStream_t s);
void mul(const float* a, const float* b, float* out, int64_t n, int64_t nb, cudaStream_t s);
void scale(const float* a, float* out, int64_t n, float f, cudaStream_t s);
void silu(const float* a, float* out, int64_t n, cudaStream_t s);
void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t s);

// ---- norm.cu ------------------------------------------------------------------------------
void softmax(const float* a, float* out, int64_t rows, int64_t n, cudaStream_t s);
void rms_norm(const float* x, const float* w, float* out, int64_t rows, int64_t d, float eps,
              cudaStream_t s);
// Index of the largest value per row (first on ties; NaN is never the largest).
void argmax(const float* a, int32_t* out, int64_t rows, int64_t n, cudaStream_t s);

// ---- rope.cu ------------------------------------------------------------------------------
// x, out [s, h, d]; pos [s]; freq_factors [r/2] or null. mode 0: adjacent pairs, 1: halves.
void rope(const float* x, const int32_t* pos, const float* freq_factors, float* out, int64_t s,
          int64_t h, int64_t d, int64_t r, int mode, float theta, cudaStream_t st);

// ---- attention.cu -------------------------------------------------------------------------
struct AttnShape {
  int64_t s, hq, hkv, d;  // q [s, hq, d]
  int64_t t;              // k, v [t, hkv, d]
  float scale;
  // Without pos: causal, past, kv_len as ops.def's iattr[0..2] (kv_len 0 = t).
  int causal = 0;
  int64_t past = 0, kv_len = 0;
};
// pos [s] or null (then the AttnShape attributes apply).
void attention(const float* q, const float* k, const float* v, const int32_t* pos, float* out,
               const AttnShape& a, cudaStream_t s);

// kv_store: cache [t, row] (row = h * d floats), x [s, row], pos [s]. A position >= t is an
// error (err) and leaves the cache unchanged; a negative position stores nothing.
void kv_store(float* cache, const float* x, const int32_t* pos, int64_t s, int64_t row, int64_t t,
              ErrWord err, cudaStream_t st);

// ---- embed.cu -----------------------------------------------------------------------------
// out [s, d] = table [v, d] rows ids [s]; the table is f32, f16, bf16 or a GGUF block type
// (rows of row_bytes(dtype, d) bytes). An id outside [0, v) is an error (err); its row is zero.
void embed(const void* table, uint32_t dtype, const int32_t* ids, float* out, int64_t s, int64_t v,
           int64_t d, ErrWord err, cudaStream_t st);

// ---- matmul.cu ----------------------------------------------------------------------------
// out [m, n] = x [m, k] @ w [n, k]^T. w: f32, f16, bf16 or a GGUF block type (rows of
// row_bytes(dtype, k) bytes, read in place).
// Device scratch bytes one call needs (int8 activation blocks; 0 when none), 256-aligned use.
size_t matmul_scratch_bytes(uint32_t wtype, int64_t m, int64_t k, const Caps& caps);
void matmul(const float* x, const void* w, uint32_t wtype, float* out, int64_t m, int64_t n,
            int64_t k, void* scratch, const Caps& caps, cudaStream_t s);

}  // namespace rlx::gpu
