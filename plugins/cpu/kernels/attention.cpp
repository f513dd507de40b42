// ATTENTION: q [s, hq, d], k [t, hkv, d], v [t, hkv, d] -> out [s, hq, d].
// Per (query row i, head h), with kv head g = h / (hq / hkv) read in place (GQA, no copies):
//   keys   j in [0, n),  n = min(kv_len, causal ? past + i + 1 : kv_len)
//          or, with positions (a KV cache of capacity t), n = min(t, pos[i] + 1)
//   score  s_j = scale * q[i, h] . k[j, g]
//   out    [i, h] = sum_j softmax(s)_j * v[j, g]
// Rows of k and v at or beyond n (the unused tail of a KV cache) are never read.
// Cost: s * hq * n * 2d multiply-adds. Head dims 64 and 128 take the blocked (flash-style) path
// below; other head dims one (i, h) pair at a time. The pool balances the items even though
// causal rows grow with i.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../error.h"
#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {

namespace {

// Keys a query row sees: [0, n).
int64_t visible(const AttentionParams& p, int64_t i) {
  if (p.pos) return std::min<int64_t>(p.t, int64_t{p.pos[i]} + 1);
  return p.causal ? std::min(p.kv_len, p.past + i + 1) : p.kv_len;
}

// softmax over score[0, n) in place (max-subtracted, the sum in double); returns 1 / sum.
float softmax_in_place(float* score, int64_t n) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, score[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    score[j] = std::exp(score[j] - mx);
    sum += score[j];
  }
  return static_cast<float>(1.0 / sum);
}

// Any head dim: one query head at a time.
void head_any(const AttentionParams& p, const float* qi, const float* kg, const float* vg,
              float* oi, int64_t n, std::vector<float>& score) {
  const int64_t kv_row = p.hkv * p.d;
  score.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) score[j] = p.scale * dot_f32(qi, kg + j * kv_row, p.d);
  const float inv = softmax_in_place(score.data(), n);
  std::fill(oi, oi + p.d, 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    const float pj = score[j] * inv;
    const float* vj = vg + j * kv_row;
    for (int64_t c = 0; c < p.d; ++c) oi[c] += pj * vj[c];
  }
}

// Head dim D known at compile time, flash-style: a work item is a block of kBq query rows and
// one KV head, i.e. kBq * group query heads that read the same keys. Keys go in blocks of kBk
// (64 rows of K and V: 32 KiB each at D = 128, L1/L2-resident) and every query of the item
// consumes a block before the next is read, with an online softmax (running max m, sum l,
// output o rescaled when the max grows). Each K/V row is thus read from memory once per item
// instead of once per query head; the output row lives in registers within a block.
constexpr int64_t kBq = 8;
constexpr int64_t kBk = 64;

struct FlashState {
  std::vector<float> m, l, o;
};

template <int D>
void block_fixed(const AttentionParams& p, const float* q, const float* k, const float* v,
                 float* out, int64_t i0, int64_t i1, int64_t g, FlashState& st) {
  constexpr int kV = D / kVecLanes;
  const int64_t group = p.hq / p.hkv, q_row = p.hq * D, kv_row = p.hkv * D;
  const int64_t nq = (i1 - i0) * group;
  st.m.assign(static_cast<size_t>(nq), -INFINITY);
  st.l.assign(static_cast<size_t>(nq), 0.0f);
  st.o.assign(static_cast<size_t>(nq * D), 0.0f);
  int64_t n_max = 0;
  for (int64_t i = i0; i < i1; ++i) n_max = std::max(n_max, visible(p, i));
  float s[kBk];
  for (int64_t j0 = 0; j0 < n_max; j0 += kBk) {
    for (int64_t a = 0; a < nq; ++a) {
      const int64_t i = i0 + a / group, h = g * group + a % group;
      const int64_t je = std::min(j0 + kBk, visible(p, i));
      if (je <= j0) continue;
      const float* qv = q + i * q_row + h * D;
      float bm = -INFINITY;
      for (int64_t j = j0; j < je; ++j) {
        s[j - j0] = p.scale * dot_f32(qv, k + j * kv_row + g * D, D);
        bm = std::max(bm, s[j - j0]);
      }
      const float m_new = std::max(st.m[a], bm);
      const float alpha = std::exp(st.m[a] - m_new);  // 0 on the first block
      float sum = 0.0f;
      for (int64_t j = j0; j < je; ++j) {
        s[j - j0] = std::exp(s[j - j0] - m_new);
        sum += s[j - j0];
      }
      st.l[a] = st.l[a] * alpha + sum;
      st.m[a] = m_new;
      float* oa = st.o.data() + a * D;
      VecF32 acc[kV];
      for (int c = 0; c < kV; ++c) {
        RLX_CPU_LOADV(acc[c], oa + c * kVecLanes);
        acc[c] *= alpha;
      }
      for (int64_t j = j0; j < je; ++j) {
        const float pj = s[j - j0];
        const float* vj = v + j * kv_row + g * D;
        for (int c = 0; c < kV; ++c) {
          VecF32 x;
          RLX_CPU_LOADV(x, vj + c * kVecLanes);
          acc[c] += pj * x;
        }
      }
      std::memcpy(oa, acc, sizeof acc);
    }
  }
  for (int64_t a = 0; a < nq; ++a) {
    const int64_t i = i0 + a / group, h = g * group + a % group;
    float* oi = out + i * q_row + h * D;
    const float inv = st.l[a] > 0.0f ? 1.0f / st.l[a] : 0.0f;  // a row that sees no key: zeros
    for (int c = 0; c < D; ++c) oi[c] = st.o[a * D + c] * inv;
  }
}

}  // namespace

void attention_f32(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
                   const AttentionParams& p) {
  const int64_t group = p.hq / p.hkv;
  const int64_t q_row = p.hq * p.d;  // stride between query rows
  if (p.d == 64 || p.d == 128) {
    auto block = p.d == 64 ? block_fixed<64> : block_fixed<128>;
    const int64_t blocks = (p.s + kBq - 1) / kBq;
    pool.parallel_for(blocks * p.hkv, [&](int64_t begin, int64_t end) {
      FlashState st;  // per chunk: no shared scratch, no thread_local in a plugin
      for (int64_t item = begin; item < end; ++item) {
        const int64_t i0 = (item / p.hkv) * kBq, g = item % p.hkv;
        block(p, q, k, v, out, i0, std::min(p.s, i0 + kBq), g, st);
      }
    });
    return;
  }
  pool.parallel_for(p.s * p.hq, [&](int64_t begin, int64_t end) {
    std::vector<float> score;  // per chunk
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i = item / p.hq, h = item % p.hq, g = h / group;
      float* oi = out + i * q_row + h * p.d;
      const int64_t n = visible(p, i);
      if (n <= 0) {
        std::fill(oi, oi + p.d, 0.0f);
        continue;
      }
      head_any(p, q + i * q_row + h * p.d, k + g * p.d, v + g * p.d, oi, n, score);
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
