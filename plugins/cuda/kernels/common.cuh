// Small helpers shared by the kernel files: grid sizing and block-wide reductions.
#pragma once

#include <cstdint>

#include "../gpu.h"

namespace rlx::gpu {

// Blocks for a grid-stride loop over n items with `threads` per block (at least 1, capped so
// the grid stays in the range every device accepts).
inline unsigned blocks_for(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535) b = 65535;
  return static_cast<unsigned>(b);
}

// Block-wide sum / max for blocks of up to 1024 threads; every thread gets the result. `red`
// is a __shared__ float[32] of the caller (one slot per warp); the call ends with a barrier,
// so `red` can be reused right after.
RLX_DEV float block_sum(float v, float* red) {
  const int lane = threadIdx.x % RLX_WARP, warp = threadIdx.x / RLX_WARP;
  const int n_warps = (blockDim.x + RLX_WARP - 1) / RLX_WARP;
  v = warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float r = 0.0f;
  for (int w = 0; w < n_warps; ++w) r += red[w];
  __syncthreads();
  return r;
}

RLX_DEV float block_max(float v, float* red) {
  const int lane = threadIdx.x % RLX_WARP, warp = threadIdx.x / RLX_WARP;
  const int n_warps = (blockDim.x + RLX_WARP - 1) / RLX_WARP;
  v = warp_max(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < n_warps; ++w) r = fmaxf(r, red[w]);
  __syncthreads();
  return r;
}

}  // namespace rlx::gpu
