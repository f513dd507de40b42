// MATMUL with GGUF block weights as integer dot products (the fused dequant-matmul of the
// x86 builds). Each x row is quantized once per call to 8-bit blocks of 32 (Q8Block: scale d,
// d * sum(q), 32 int8); each weight block is unpacked to 32 bytes in registers and multiplied
// with them in int8 x int8 -> int32 (AVX2 maddubs + madd, or one AVX-512 VNNI dpbusd), then
// scaled once per block in f32:
//
//   signed weights   w = dw * q          (q8_0, q6_k - 32)
//       sum_e w[e] x[e] ~ dw * dx * sum(q * qx)
//   offset weights   w = dw * q + mw     (q4_1, q5_1: m; q4_k, q5_k: -dmin * mn; q4_0: -8 d;
//                                         q5_0: -16 d)
//       ~ dw * dx * sum(q * qx) + mw * (dx * sum(qx))      (the second factor is Q8Block::s)
//
// A weight row is unpacked once per group of up to 4 x rows (prefill), and work items are
// (64 x rows, 16 w rows) tiles as in matmul_packed, so w stays in L1/L2 while x rows stream.
// Results differ from the f32 path by the activation rounding (rel. ~1e-3 per dot product),
// as llama.cpp's do; RLX_CPU_QUANT_ACT=f32 selects the exact path (see device.cpp).
#include "kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <algorithm>

#include "../error.h"
#include "../thread_pool.h"
#include "qdot_blocks.h"
#include "qdot_vnni.h"

namespace rlx::cpu {
namespace {

using namespace qdot;

// out[i * n + j] for x rows [i, i + R) and w row j.
template <class T, int R>
inline void dot_rows(const uint8_t* wrow, const Q8Block* xq, int64_t nb, int64_t i, int64_t j,
                     int64_t n, float* out) {
  Acc<R> a;
  for (int r = 0; r < R; ++r) {
    a.x[r] = xq + (i + r) * nb;
    a.acc[r] = _mm256_setzero_ps();
    a.offs[r] = 0.0f;
  }
  visit_row<T>(wrow, nb, a);
  for (int r = 0; r < R; ++r) out[(i + r) * n + j] = hsum(a.acc[r]) + a.offs[r];
}

template <class T>
void gemv_tile(const uint8_t* w, int64_t wrow, const Q8Block* xq, int64_t nb, int64_t i0,
               int64_t i1, int64_t j0, int64_t j1, int64_t n, float* out) {
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* wj = w + j * wrow;
    int64_t i = i0;
    for (; i + 4 <= i1; i += 4) dot_rows<T, 4>(wj, xq, nb, i, j, n, out);
    for (; i < i1; ++i) dot_rows<T, 1>(wj, xq, nb, i, j, n, out);
  }
}


template <class T>
void matmul_type(ThreadPool& pool, const Q8Block* xq, void* extra, const uint8_t* w, float* out,
                 int64_t m, int64_t n, int64_t k) {
  const int64_t nb = k / 32;
  const int64_t wrow = (k / (32 * T::kChunks)) * T::kBytes;
#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
  if constexpr (kTileable<T>) {
    if (m >= kGemmMinRows) {
      const int64_t tiles = (n + kTileRows - 1) / kTileRows;
      pool.parallel_for(tiles, [&](int64_t begin, int64_t end) {
        Tile t;  // per chunk of tiles: no shared scratch
        for (int64_t tile = begin; tile < end; ++tile) {
          const int64_t j0 = tile * kTileRows;
          gemm_tile<T>(t, w, wrow, xq, nb, m, j0, std::min(n, j0 + kTileRows), n, out);
        }
      });
      return;
    }
  }
  if constexpr (kHasGemv<T>) {
    if (m < kGemmMinRows) {
      const XRows xr(xq, m * nb, extra);
      const int64_t tiles = (n + kTileN - 1) / kTileN;
      pool.parallel_for(tiles, [&](int64_t begin, int64_t end) {
        for (int64_t j = begin * kTileN; j < std::min(n, end * kTileN); ++j)
          for (int64_t i = 0; i < m; ++i)
            out[i * n + j] = kGemv<T>(w + j * wrow, xr.row(i, nb), xq + i * nb, nb);
      });
      return;
    }
  }
#endif
  const TileGrid grid{m, n, kBlockM, kTileN};
  pool.parallel_for(grid.count(), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const auto [i0, i1, j0, j1] = grid[t];
      gemv_tile<T>(w, wrow, xq, nb, i0, i1, j0, j1, n, out);
    }
  });
}

using MatmulFn = void (*)(ThreadPool&, const Q8Block*, void*, const uint8_t*, float*, int64_t,
                          int64_t, int64_t);

MatmulFn matmul_fn(uint32_t dtype) {
  switch (dtype) {
    case RLX_Q8_0: return matmul_type<Q8_0>;
    case RLX_Q4_0: return matmul_type<Q4_0>;
    case RLX_Q4_1: return matmul_type<Q4_1>;
    case RLX_Q5_0: return matmul_type<Q5_0>;
    case RLX_Q5_1: return matmul_type<Q5_1>;
    case RLX_Q4_K: return matmul_type<QK45<false>>;
    case RLX_Q5_K: return matmul_type<QK45<true>>;
    case RLX_Q6_K: return matmul_type<Q6_K>;
    case RLX_Q3_K: return matmul_type<Q3_K>;
    case RLX_Q2_K: return matmul_type<Q2_K>;
    default: return nullptr;
  }
}

}  // namespace

bool matmul_q8_supported(uint32_t dtype, int64_t k) {
  return matmul_fn(dtype) != nullptr && k % 32 == 0 &&
         quant::row_bytes(static_cast<rlx_dtype>(dtype), k) > 0;
}

void matmul_q8(ThreadPool& pool, Scratch& scratch, const float* x, const uint8_t* w,
               uint32_t w_dtype, float* out, int64_t m, int64_t n, int64_t k) {
  if (!matmul_q8_supported(w_dtype, k))
    fail(RLX_ERR_INTERNAL, "matmul_q8: dtype ", w_dtype, " with k = ", k, " has no int8 kernel");
  const int64_t nb = k / 32;
  const size_t xq_bytes = static_cast<size_t>(m * nb) * sizeof(Q8Block);
  auto* mem = static_cast<uint8_t*>(scratch.get(xq_bytes + xrows_bytes(m * nb)));
  auto* xq = reinterpret_cast<Q8Block*>(mem);
  pool.parallel_for(
      m, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) quantize_row(x + i * k, xq + i * nb, k);
      },
      16);
  matmul_fn(w_dtype)(pool, xq, mem + xq_bytes, w, out, m, n, k);
}

}  // namespace rlx::cpu

#else  // no AVX2: the dequantizing path (quant.cpp) serves every dtype

namespace rlx::cpu {
bool matmul_q8_supported(uint32_t, int64_t) { return false; }
void matmul_q8(ThreadPool&, Scratch&, const float*, const uint8_t*, uint32_t, float*, int64_t,
               int64_t, int64_t) {}
}  // namespace rlx::cpu

#endif
