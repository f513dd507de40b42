// ROPE: rotate pairs of each head's first r dims by position-dependent angles.
//   mode 0 (GGUF llama): pairs (x[2i], x[2i+1]);  mode 1 (HF / neox): pairs (x[i], x[i + r/2])
//   angle_i = pos * theta^(-2i/r) / freq_factors[i]
// As on the cpu, the angle and its sin / cos are computed in double (angles reach 10^5 rad at
// long context, where f32 keeps little of the fraction), then rounded to f32. One thread per
// (row, head, item): items [0, r/2) rotate a pair, items [r/2, r/2 + d - r) copy a pass-through
// dim. Each thread reads what it writes first, so out may be x.
#include <cmath>

#include "common.cuh"
#include "kernels.h"

namespace rlx::gpu {

namespace {

constexpr int kThreads = 256;

RLX_GLOBAL void rope_kernel(const float* x, const int32_t* pos, const float* ff, float* out,
                            int64_t s, int64_t h, int64_t d, int64_t r, int mode, double theta) {
  const int64_t half = r / 2, per_head = half + (d - r);
  const int64_t total = s * h * per_head;
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t item = e % per_head, rh = e / per_head;  // rh = row * h + head
    const int64_t base = rh * d;
    if (item >= half) {
      const int64_t c = r + (item - half);
      out[base + c] = x[base + c];
      continue;
    }
    double f = pow(theta, -2.0 * static_cast<double>(item) / static_cast<double>(r));
    if (ff) f /= static_cast<double>(ff[item]);
    const double a = static_cast<double>(pos[rh / h]) * f;
    const float cs = static_cast<float>(cos(a)), sn = static_cast<float>(sin(a));
    const int64_t i0 = mode == 0 ? 2 * item : item;
    const int64_t i1 = mode == 0 ? 2 * item + 1 : item + half;
    const float x0 = x[base + i0], x1 = x[base + i1];
    out[base + i0] = x0 * cs - x1 * sn;
    out[base + i1] = x0 * sn + x1 * cs;
  }
}

}  // namespace

void rope(const float* x, const int32_t* pos, const float* freq_factors, float* out, int64_t s,
          int64_t h, int64_t d, int64_t r, int mode, float theta, cudaStream_t st) {
  const int64_t total = s * h * (r / 2 + d - r);
  if (total > 0)
    launch(rope_kernel, blocks_for(total, kThreads), kThreads, st, x, pos, freq_factors, out, s, h,
           d, r, mode, static_cast<double>(theta));
}

}  // namespace rlx::gpu
