// ROPE: rotate pairs of each head's first r dims by position-dependent angles.
//   mode 0 (GGUF llama): pairs (x[2i], x[2i+1]);  mode 1 (HF / neox): pairs (x[i], x[i + r/2])
//   angle_i = pos * theta^(-2i/r) / freq_factors[i]
// Angles reach pos * 1 rad for i = 0 (10^5+ at long context), where f32 would lose most of the
// fraction, so the angle and its sin/cos are computed in double and only then rounded to f32.
// Each pair is read completely before it is written, so out == x is safe.
#include <algorithm>
#include <cmath>
#include <vector>

#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {

void rope_f32(ThreadPool& pool, const float* x, const int32_t* pos, const float* freq_factors,
              float* out, const RopeParams& p) {
  const int64_t half = p.r / 2;
  // inv_freq[i] = theta^(-2i/r) / freq_factors[i], shared by every row.
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = std::pow(static_cast<double>(p.theta),
                        -2.0 * static_cast<double>(i) / static_cast<double>(p.r));
    if (freq_factors) f /= static_cast<double>(freq_factors[i]);
    inv_freq[i] = f;
  }
  const int64_t row = p.h * p.d;  // one token: h heads of d
  pool.parallel_for(p.s, [&](int64_t begin, int64_t end) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t t = begin; t < end; ++t) {
      // One token's angles serve all of its heads.
      for (int64_t i = 0; i < half; ++i) {
        double a = static_cast<double>(pos[t]) * inv_freq[i];
        cs[i] = static_cast<float>(std::cos(a));
        sn[i] = static_cast<float>(std::sin(a));
      }
      for (int64_t hh = 0; hh < p.h; ++hh) {
        const float* xs = x + t * row + hh * p.d;
        float* os = out + t * row + hh * p.d;
        for (int64_t i = 0; i < half; ++i) {
          int64_t i0 = p.mode == 0 ? 2 * i : i;
          int64_t i1 = p.mode == 0 ? 2 * i + 1 : i + half;
          float x0 = xs[i0], x1 = xs[i1];
          os[i0] = x0 * cs[i] - x1 * sn[i];
          os[i1] = x0 * sn[i] + x1 * cs[i];
        }
        if (os != xs)
          for (int64_t i = p.r; i < p.d; ++i) os[i] = xs[i];
      }
    }
  });
}

}  // namespace rlx::cpu
