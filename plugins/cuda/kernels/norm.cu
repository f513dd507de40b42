// Row reductions: rms_norm and softmax (one block per row), argmax (one block per row).
#include <algorithm>
#include <cmath>

#include "common.cuh"
#include "kernels.h"

namespace rlx::gpu {

namespace {

constexpr int kThreads = 256;

// out = x / sqrt(mean(x^2) + eps) * w; out may be x.
RLX_GLOBAL void rms_norm_kernel(const float* x, const float* w, float* out, int64_t d, float eps) {
  __shared__ float red[32];
  const float* xr = x + int64_t{blockIdx.x} * d;
  float* yr = out + int64_t{blockIdx.x} * d;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss, red);
  // mean and rsqrt in double, as the cpu backend does: one scale multiplies the whole row.
  const float inv = static_cast<float>(1.0 / sqrt(static_cast<double>(ss) / static_cast<double>(d) + eps));
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * inv * w[i];
}

RLX_GLOBAL void softmax_kernel(const float* a, float* out, int64_t n) {
  __shared__ float red[32];
  const float* xr = a + int64_t{blockIdx.x} * n;
  float* yr = out + int64_t{blockIdx.x} * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, xr[i]);
  m = block_max(m, red);
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = expf(xr[i] - m);
    yr[i] = e;
    s += e;
  }
  s = block_sum(s, red);
  const float inv = 1.0f / s;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] *= inv;
}

// (value, index) pairs: the larger value wins, the smaller index on ties; NaN never wins.
RLX_DEV bool better(float v, int64_t i, float bv, int64_t bi) {
  if (v != v) return false;
  if (bv != bv) return true;
  return v > bv || (v == bv && i < bi);
}

RLX_GLOBAL void argmax_kernel(const float* a, int32_t* out, int64_t n) {
  __shared__ float vals[32];
  __shared__ int64_t idxs[32];
  const float* xr = a + int64_t{blockIdx.x} * n;
  float bv = NAN;
  int64_t bi = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (better(xr[i], i, bv, bi)) bv = xr[i], bi = i;
  for (int m = RLX_WARP / 2; m > 0; m >>= 1) {
    const float ov = warp_xor(bv, m);
    const int64_t oi = (int64_t{warp_xor(static_cast<int>(bi >> 32), m)} << 32) |
                       static_cast<uint32_t>(warp_xor(static_cast<int>(bi), m));
    if (better(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  const int lane = threadIdx.x % RLX_WARP, warp = threadIdx.x / RLX_WARP;
  if (lane == 0) vals[warp] = bv, idxs[warp] = bi;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>((blockDim.x + RLX_WARP - 1) / RLX_WARP); ++w)
      if (better(vals[w], idxs[w], bv, bi)) bv = vals[w], bi = idxs[w];
    out[blockIdx.x] = static_cast<int32_t>(bi);  // an all-NaN row gives 0
  }
}

// One block per row; grids past 65535 rows loop in chunks.
template <class F>
void per_row(int64_t rows, F&& launch_chunk) {
  for (int64_t r0 = 0; r0 < rows; r0 += 65535) launch_chunk(r0, std::min<int64_t>(rows - r0, 65535));
}

}  // namespace

void rms_norm(const float* x, const float* w, float* out, int64_t rows, int64_t d, float eps,
              cudaStream_t s) {
  per_row(rows, [&](int64_t r0, int64_t n) {
    launch(rms_norm_kernel, static_cast<unsigned>(n), kThreads, s, x + r0 * d, w, out + r0 * d, d,
           eps);
  });
}

void softmax(const float* a, float* out, int64_t rows, int64_t n, cudaStream_t s) {
  per_row(rows, [&](int64_t r0, int64_t c) {
    launch(softmax_kernel, static_cast<unsigned>(c), kThreads, s, a + r0 * n, out + r0 * n, n);
  });
}

void argmax(const float* a, int32_t* out, int64_t rows, int64_t n, cudaStream_t s) {
  per_row(rows, [&](int64_t r0, int64_t c) {
    launch(argmax_kernel, static_cast<unsigned>(c), kThreads, s, a + r0 * n, out + r0, n);
  });
}

}  // namespace rlx::gpu
