// MATMUL with f16 / bf16 weights for few x rows (decode): each weight row converted 8 values at
// a time in registers (F16C vcvtph2ps; bf16 is the high half of an f32) and fused into the f32
// dot product, so decode reads 2 bytes per weight once with no f32 tile. x86 with AVX2 + F16C;
// elsewhere the dequantizing path (quant.cpp) serves.
#include "kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>

#include "../thread_pool.h"
#include "qdot_blocks.h"
#include "rlx/quant.h"

namespace rlx::cpu {
namespace {

using qdot::hsum;
using qdot::kTileN;  // weight rows per work item, as the quantized kernels

template <bool kBf16>
inline __m256 load8(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kBf16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  else
    return _mm256_cvtph_ps(h);
}

template <bool kBf16>
float dot16(const float* x, const uint8_t* w, int64_t k) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(w + 2 * i) + 1024, _MM_HINT_T0);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), load8<kBf16>(w + 2 * i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), load8<kBf16>(w + 2 * i + 16), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), load8<kBf16>(w + 2 * i + 32), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), load8<kBf16>(w + 2 * i + 48), a3);
  }
  for (; i + 8 <= k; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), load8<kBf16>(w + 2 * i), a0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < k; ++i) {
    uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    sum += x[i] * (kBf16 ? quant::bf16_to_f32(h) : _cvtsh_ss(h));
  }
  return sum;
}
}  // namespace

bool gemv_16bit_supported(uint32_t w_dtype) { return w_dtype == RLX_F16 || w_dtype == RLX_BF16; }

void gemv_16bit(ThreadPool& pool, const float* x, const uint8_t* w, uint32_t w_dtype, float* out,
                int64_t m, int64_t n, int64_t k) {
  const bool bf16 = w_dtype == RLX_BF16;
  pool.parallel_for((n + kTileN - 1) / kTileN, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin * kTileN; j < std::min(n, end * kTileN); ++j)
      for (int64_t i = 0; i < m; ++i)
        out[i * n + j] = bf16 ? dot16<true>(x + i * k, w + j * 2 * k, k)
                              : dot16<false>(x + i * k, w + j * 2 * k, k);
  });
}

}  // namespace rlx::cpu

#else

namespace rlx::cpu {
bool gemv_16bit_supported(uint32_t) { return false; }
void gemv_16bit(ThreadPool&, const float*, const uint8_t*, uint32_t, float*, int64_t, int64_t,
                int64_t) {}
}  // namespace rlx::cpu

#endif
