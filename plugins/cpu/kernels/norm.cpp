// RMS_NORM and SOFTMAX: row-wise reductions. Each row is fully read (sum / max) before any of
// it is written, so out == x is safe.
#include <algorithm>
#include <cmath>

#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {
namespace {

// Rows per chunk so one chunk is roughly 16K elements of work.
int64_t row_grain(int64_t row_len) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(row_len, 1));
}

}  // namespace

void rms_norm_f32(ThreadPool& pool, const float* x, const float* w, float* out, int64_t rows,
                  int64_t d, float eps) {
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = x + r * d;
          float* orow = out + r * d;
          // Sum of squares in f32 lanes; mean and rsqrt in double since the one scale multiplies
          // every output of the row.
          double ss = dot_f32(xr, xr, d);
          float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + eps));
          for (int64_t i = 0; i < d; ++i) orow[i] = xr[i] * inv * w[i];
        }
      },
      row_grain(d));
}

void softmax_f32(ThreadPool& pool, const float* a, float* out, int64_t rows, int64_t n) {
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* ar = a + r * n;
          float* orow = out + r * n;
          float mx = -INFINITY;
          for (int64_t i = 0; i < n; ++i) mx = std::max(mx, ar[i]);
          // A row of -inf (fully masked) has no defined softmax; give zeros, not NaN.
          if (mx == -INFINITY) {
            for (int64_t i = 0; i < n; ++i) orow[i] = 0.0f;
            continue;
          }
          double sum = 0.0;
          for (int64_t i = 0; i < n; ++i) {
            float e = std::exp(ar[i] - mx);
            orow[i] = e;
            sum += e;
          }
          float inv = static_cast<float>(1.0 / sum);
          for (int64_t i = 0; i < n; ++i) orow[i] *= inv;
        }
      },
      row_grain(n));
}

}  // namespace rlx::cpu
