// ATTENTION: q [s, hq, d], k [t, hkv, d], v [t, hkv, d] -> out [s, hq, d].
// Per (query row i, head h), with kv head g = h / (hq / hkv) read in place (GQA, no copies):
//   keys   j in [0, n),  n = min(kv_len, causal ? past + i + 1 : kv_len)
//          or, with positions (a KV cache of capacity t), n = min(t, pos[i] + 1)
//   score  s_j = scale * q[i, h] . k[j, g]
//   out    [i, h] = sum_j softmax(s)_j * v[j, g]
// Rows of k and v at or beyond n (the unused tail of a KV cache) are never read.
// Cost: s * hq * n * 2d multiply-adds; work items are (i, h) pairs, which the pool balances
// even though causal rows grow with i.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../error.h"
#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {

void attention_f32(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
                   const AttentionParams& p) {
  const int64_t group = p.hq / p.hkv;
  const int64_t q_row = p.hq * p.d;    // stride between query rows
  const int64_t kv_row = p.hkv * p.d;  // stride between key / value rows
  pool.parallel_for(p.s * p.hq, [&](int64_t begin, int64_t end) {
    std::vector<float> score;  // per chunk: no shared scratch, no thread_local in a plugin
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / p.hq, h = item % p.hq, g = h / group;
      const float* qi = q + i * q_row + h * p.d;
      float* oi = out + i * q_row + h * p.d;
      int64_t n = p.kv_len;
      if (p.pos)
        n = std::min<int64_t>(p.t, int64_t{p.pos[i]} + 1);
      else if (p.causal)
        n = std::min(n, p.past + i + 1);
      std::fill(oi, oi + p.d, 0.0f);
      if (n <= 0) continue;

      score.resize(static_cast<size_t>(n));
      float mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        score[j] = p.scale * dot_f32(qi, k + j * kv_row + g * p.d, p.d);
        mx = std::max(mx, score[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        score[j] = std::exp(score[j] - mx);
        sum += score[j];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < n; ++j) {
        const float pj = score[j] * inv;
        const float* vj = v + j * kv_row + g * p.d;
        for (int64_t c = 0; c < p.d; ++c) oi[c] += pj * vj[c];
      }
    }
  });
}

// KV_STORE: the rows are copied in order on the calling thread. A decode step writes one row per
// layer and a prefill a few MB, so threads would not pay for their wake-up; doing it in order
// also gives a repeated position a defined result (the last row).
void kv_store_f32(float* cache, int64_t t, const float* x, const int32_t* pos, int64_t s,
                  int64_t row) {
  for (int64_t i = 0; i < s; ++i)
    if (pos[i] >= t)
      fail(RLX_ERR_INVALID, "position ", pos[i], " (row ", i, ") outside the cache's [0, ", t, ")");
  const size_t bytes = static_cast<size_t>(row) * sizeof(float);
  for (int64_t i = 0; i < s; ++i)  // a negative position is a padding row: nothing is stored
    if (pos[i] >= 0) std::memmove(cache + int64_t{pos[i]} * row, x + i * row, bytes);
}

}  // namespace rlx::cpu
