// ADD, MUL, SCALE, SILU, SILU_MUL, ARGMAX. Each output element depends only on the inputs at
// the same index, so running in place (out == a) is safe by construction.
#include <algorithm>
#include <cmath>

#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {
namespace {

// Elements per chunk: below this the wake-up costs more than the work (~10 us vs ~16K flops).
constexpr int64_t kGrain = 16384;

// out[i] = op(a[i], b[i % nb]) over chunks; inside a chunk the index into b runs in contiguous
// segments so each inner loop is a plain vectorizable stream.
template <class Op>
void broadcast_binary(ThreadPool& pool, const float* a, const float* b, float* out, int64_t n,
                      int64_t nb, Op op) {
  pool.parallel_for(
      n,
      [&](int64_t begin, int64_t end) {
        int64_t i = begin;
        int64_t j = begin % nb;
        while (i < end) {
          int64_t len = std::min(end - i, nb - j);
          const float* ai = a + i;
          const float* bj = b + j;
          float* oi = out + i;
          for (int64_t t = 0; t < len; ++t) oi[t] = op(ai[t], bj[t]);
          i += len;
          j = 0;
        }
      },
      kGrain);
}

template <class Op>
void unary(ThreadPool& pool, const float* a, float* out, int64_t n, Op op) {
  pool.parallel_for(
      n,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = op(a[i]);
      },
      kGrain);
}

inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

}  // namespace

void add_f32(ThreadPool& pool, const float* a, const float* b, float* out, int64_t n, int64_t nb) {
  broadcast_binary(pool, a, b, out, n, nb, [](float x, float y) { return x + y; });
}

void mul_f32(ThreadPool& pool, const float* a, const float* b, float* out, int64_t n, int64_t nb) {
  broadcast_binary(pool, a, b, out, n, nb, [](float x, float y) { return x * y; });
}

void scale_f32(ThreadPool& pool, const float* a, float s, float* out, int64_t n) {
  unary(pool, a, out, n, [s](float x) { return x * s; });
}

void silu_f32(ThreadPool& pool, const float* a, float* out, int64_t n) {
  unary(pool, a, out, n, [](float x) { return silu(x); });
}

void silu_mul_f32(ThreadPool& pool, const float* gate, const float* up, float* out, int64_t n) {
  pool.parallel_for(
      n,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = silu(gate[i]) * up[i];
      },
      kGrain);
}

void argmax_f32(ThreadPool& pool, const float* a, int32_t* out, int64_t rows, int64_t n) {
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* row = a + r * n;
          int64_t best = 0;
          float best_v = 0.0f;
          bool found = false;
          for (int64_t i = 0; i < n; ++i) {
            float v = row[i];
            if (std::isnan(v)) continue;
            if (!found || v > best_v) {  // strict: the first of equal maxima wins
              best = i;
              best_v = v;
              found = true;
            }
          }
          out[r] = static_cast<int32_t>(best);
        }
      },
      grain);
}

}  // namespace rlx::cpu
