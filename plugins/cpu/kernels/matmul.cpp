// MATMUL: x [m, k] @ w [n, k]^T -> out [m, n], the linear layer. Both operands are read along k,
// so every inner loop is a contiguous dot product.
//
// Work is split into tiles of kTileM x-rows by kTileN w-rows. At k = 4096 a tile's operands are
// 2 x 256 KB, which stay in L2 while each x row is reused kTileN times and each w row kTileM
// times. Decode (m = 1) degenerates to n / kTileN tiles of a matrix-vector product, bound by
// reading w once.
#include <algorithm>

#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {
namespace {

constexpr int64_t kTileM = 16;
constexpr int64_t kTileN = 16;

// Four x rows against one w row at once: each w vector is loaded once for four FMAs, and the
// four accumulators hide the FMA latency.
inline void dot_4x1(const float* x0, const float* x1, const float* x2, const float* x3,
                    const float* w, int64_t k, float out[4]) {
  VecF32 a0 = {}, a1 = {}, a2 = {}, a3 = {}, vw, vx;
  int64_t i = 0;
  for (; i + kVecLanes <= k; i += kVecLanes) {
    RLX_CPU_LOADV(vw, w + i);
    RLX_CPU_LOADV(vx, x0 + i);
    a0 += vx * vw;
    RLX_CPU_LOADV(vx, x1 + i);
    a1 += vx * vw;
    RLX_CPU_LOADV(vx, x2 + i);
    a2 += vx * vw;
    RLX_CPU_LOADV(vx, x3 + i);
    a3 += vx * vw;
  }
  RLX_CPU_HSUM(a0, out[0]);
  RLX_CPU_HSUM(a1, out[1]);
  RLX_CPU_HSUM(a2, out[2]);
  RLX_CPU_HSUM(a3, out[3]);
  for (; i < k; ++i) {
    out[0] += x0[i] * w[i];
    out[1] += x1[i] * w[i];
    out[2] += x2[i] * w[i];
    out[3] += x3[i] * w[i];
  }
}

}  // namespace

void matmul_block_f32(const float* x, const float* w, float* out, int64_t i0, int64_t i1,
                      int64_t j0, int64_t j1, int64_t n, int64_t k) {
  for (int64_t ib = i0; ib < i1; ib += kTileM) {
    const int64_t ie = std::min(i1, ib + kTileM);
    for (int64_t j = j0; j < j1; ++j) {
      const float* wj = w + (j - j0) * k;
      int64_t i = ib;
      for (; i + 4 <= ie; i += 4) {
        float r[4];
        dot_4x1(x + i * k, x + (i + 1) * k, x + (i + 2) * k, x + (i + 3) * k, wj, k, r);
        for (int q = 0; q < 4; ++q) out[(i + q) * n + j] = r[q];
      }
      for (; i < ie; ++i) out[i * n + j] = dot_f32(x + i * k, wj, k);
    }
  }
}

void matmul_f32(ThreadPool& pool, const float* x, const float* w, float* out, int64_t m, int64_t n,
                int64_t k) {
  const TileGrid grid{m, n, kTileM, kTileN};
  pool.parallel_for(grid.count(), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const auto [i0, i1, j0, j1] = grid[t];
      matmul_block_f32(x, w + j0 * k, out, i0, i1, j0, j1, n, k);
    }
  });
}

}  // namespace rlx::cpu
