// Internal to the cpu backend's integer matmul (qdot.cpp): the 8-bit activation blocks, the
// SIMD helpers, and one visitor per GGUF weight type that unpacks a row's 32-element chunks
// into registers (AVX2). Every weight type calls
//   v.sgn(c, q, dw)      signed bytes q, w = dw * q (dw per int32 lane: the per-16 scales), or
//   v.off(c, q, dw, mw)  unsigned bytes q, w = dw * q + mw (mw applied once per chunk via the
//                        x block's scaled sum).
// The GEMV accumulator (Acc, here) and the VNNI tile packer (Pack, qdot_vnni.h) are visitors.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "rlx/quant.h"

namespace rlx::cpu::qdot {

struct Q8Block {
  float d;  // x[e] ~ d * q[e]
  float s;  // d * sum(q)
  int8_t q[32];
};

// Bytes of the split (XRow) copy of `blocks` Q8Blocks: 32 values, the scale and the sum each.
constexpr size_t xrows_bytes(int64_t blocks) { return static_cast<size_t>(blocks) * (32 + 8); }

constexpr int64_t kBlockM = 64;
constexpr int64_t kTileN = 16;

inline void quantize_row(const float* x, Q8Block* out, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    __m256 amax = _mm256_setzero_ps();
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int i = 0; i < 32; i += 8)
      amax = _mm256_max_ps(amax, _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float d = _mm_cvtss_f32(m4) / 127.0f;
    const __m256 id = _mm256_set1_ps(d > 0 ? 1.0f / d : 0.0f);
    __m256i q32[4];
    for (int i = 0; i < 4; ++i)
      q32[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), id));  // nearest
    // Pack 4 x 8 int32 -> 32 int8 in element order (packs interleave 128-bit lanes: fix up).
    const __m256i p16a = _mm256_packs_epi32(q32[0], q32[1]);
    const __m256i p16b = _mm256_packs_epi32(q32[2], q32[3]);
    __m256i p8 = _mm256_packs_epi16(p16a, p16b);
    p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q), p8);
    const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p8),
                                          _mm256_set1_epi16(1));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    s4 = _mm_hadd_epi32(s4, s4);
    s4 = _mm_hadd_epi32(s4, s4);
    out[b].d = d;
    out[b].s = d * static_cast<float>(_mm_cvtsi128_si32(s4));
  }
}

inline float f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 8 int32 lanes, lane L = sum over bytes 4L..4L+3 of u * s (u unsigned, s signed bytes).
inline __m256i mul_sum_us(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}
// The same for two signed operands: |a| * (b with a's sign).
inline __m256i mul_sum_ss(__m256i a, __m256i b) {
  return mul_sum_us(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

// 16 bytes of packed nibbles -> 32 bytes: low nibbles first, then high nibbles.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}
// 32 bits -> 32 bytes, byte e = 0x10 where bit e is set.
inline __m256i bit4_bytes(uint32_t bits) {
  const __m256i sel =
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                       3, 3, 3, 3, 3, 3, 3);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), sel);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit),
                          _mm256_set1_epi8(0x10));
}

inline float hsum(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}
inline float hsum(__m256 v) {
  return hsum(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

struct Q8_0 {
  static constexpr int64_t kChunks = 1, kBytes = 34;
  template <class V>
  static void visit(const uint8_t* w, int64_t c, V& v) {
    v.sgn(c, load32(w + 2), _mm256_set1_ps(f16(w)));
  }
};
struct Q4_0 {
  static constexpr int64_t kChunks = 1, kBytes = 18;
  template <class V>
  static void visit(const uint8_t* w, int64_t c, V& v) {
    const float d = f16(w);
    v.off(c, nibbles(w + 2), d, -8.0f * d);
  }
};
struct Q4_1 {
  static constexpr int64_t kChunks = 1, kBytes = 20;
  template <class V>
  static void visit(const uint8_t* w, int64_t c, V& v) {
    v.off(c, nibbles(w + 4), f16(w), f16(w + 2));
  }
};
struct Q5_0 {
  static constexpr int64_t kChunks = 1, kBytes = 22;
  template <class V>
  static void visit(const uint8_t* w, int64_t c, V& v) {
    uint32_t qh;
    std::memcpy(&qh, w + 2, 4);
    const float d = f16(w);
    v.off(c, _mm256_or_si256(nibbles(w + 6), bit4_bytes(qh)), d, -16.0f * d);
  }
};
struct Q5_1 {
  static constexpr int64_t kChunks = 1, kBytes = 24;
  template <class V>
  static void visit(const uint8_t* w, int64_t c, V& v) {
    uint32_t qh;
    std::memcpy(&qh, w + 4, 4);
    v.off(c, _mm256_or_si256(nibbles(w + 8), bit4_bytes(qh)), f16(w), f16(w + 2));
  }
};
// Q4_K / Q5_K: chunk 2j + k of a super-block is nibble k of qs[32 j .. 32 j + 31] (Q5_K: bit 4
// is bit 2j + k of qh[l]).
template <bool kFive>
struct QK45 {
  static constexpr int64_t kChunks = 8, kBytes = kFive ? 176 : 144;
  template <class V>
  static void visit(const uint8_t* w, int64_t c, V& v) {
    const float d = f16(w), dmin = f16(w + 2);
    const uint8_t* scales = w + 4;
    const uint8_t* qs = w + (kFive ? 48 : 16);
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = load32(qs + 32 * j);
      for (int k = 0; k < 2; ++k) {
        const int s = 2 * j + k;
        int sc, mn;
        quant::k4_scale_min(scales, s, sc, mn);
        __m256i q = _mm256_and_si256(k ? _mm256_srli_epi16(raw, 4) : raw, lo4);
        if constexpr (kFive) {
          const __m256i h =
              _mm256_and_si256(_mm256_srli_epi16(load32(w + 16), s), _mm256_set1_epi8(1));
          q = _mm256_or_si256(q, _mm256_slli_epi16(h, 4));
        }
        v.off(c + s, q, d * static_cast<float>(sc), -dmin * static_cast<float>(mn));
      }
    }
  }
};
// Q6_K: chunk 4 h + c holds elements 128 h + 32 c + l; its two halves have their own scales.
struct Q6_K {
  static constexpr int64_t kChunks = 8, kBytes = 210;
  template <class V>
  static void visit(const uint8_t* w, int64_t c0, V& v) {
    const uint8_t* ql = w;
    const uint8_t* qh = w + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(w + 192);
    const float d = f16(w + 208);
    for (int h = 0; h < 2; ++h) {
      const __m256i hbits = load32(qh + 32 * h);
      for (int c = 0; c < 4; ++c) {
        const __m256i l = load32(ql + 64 * h + 32 * (c % 2));
        const __m256i lo =
            _mm256_and_si256(c / 2 ? _mm256_srli_epi16(l, 4) : l, _mm256_set1_epi8(0x0f));
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c), _mm256_set1_epi8(3));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)),
                                          _mm256_set1_epi8(32));
        const int s = 8 * h + 2 * c;
        const __m256 dw = _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(sc[s + 1])),
                                          _mm_set1_ps(d * static_cast<float>(sc[s])));
        v.sgn(c0 + 4 * h + c, q, dw);
      }
    }
  }
};

// Q3_K: chunk 4 h + j holds elements 128 h + 32 j + l: q = ((qs[32 h + l] >> 2 j) & 3) - 4,
// plus 4 where bit 4 h + j of hmask[l] is set; signed 6-bit scales per 16 elements.
struct Q3_K {
  static constexpr int64_t kChunks = 8, kBytes = 110;
  template <class V>
  static void visit(const uint8_t* w, int64_t c0, V& v) {
    const __m256i hmask = load32(w);
    const float d = f16(w + 108);
    int sc[16];
    quant::q3_k_scales(w + 96, sc);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(w + 32 + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), _mm256_set1_epi8(3));
        const __m256i hb =
            _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + j), _mm256_set1_epi8(1));
        const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hb, 2)),
                                          _mm256_set1_epi8(4));
        const int s = 8 * h + 2 * j;
        v.sgn(c0 + 4 * h + j, q,
              _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(sc[s + 1])),
                              _mm_set1_ps(d * static_cast<float>(sc[s]))));
      }
    }
  }
};
// Q2_K: chunk 4 h + j holds elements 128 h + 32 j + l: q = (qs[32 h + l] >> 2 j) & 3; per 16
// elements a 4-bit scale and a 4-bit min. The min term is a second product, of the x values
// with the min bytes (-dmin * m per sub-block).
struct Q2_K {
  static constexpr int64_t kChunks = 8, kBytes = 84;
  template <class V>
  static void visit(const uint8_t* w, int64_t c0, V& v) {
    const uint8_t* scales = w;
    const float d = f16(w + 80), dmin = f16(w + 82);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load32(w + 16 + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const int s = 8 * h + 2 * j;
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), _mm256_set1_epi8(3));
        const int64_t c = c0 + 4 * h + j;
        v.sgn(c, q,
              _mm256_set_m128(_mm_set1_ps(d * static_cast<float>(scales[s + 1] & 15)),
                              _mm_set1_ps(d * static_cast<float>(scales[s] & 15))));
        v.sgn(c,
              _mm256_set_m128i(_mm_set1_epi8(static_cast<char>(scales[s + 1] >> 4)),
                               _mm_set1_epi8(static_cast<char>(scales[s] >> 4))),
              _mm256_set1_ps(-dmin));
      }
    }
  }
};

template <class T, class V>
inline void visit_row(const uint8_t* w, int64_t nb, V& v) {
  for (int64_t c = 0; c < nb; c += T::kChunks, w += T::kBytes) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1024, _MM_HINT_T0);
    T::visit(w, c, v);
  }
}

// GEMV / small-m: R x rows against one weight row, f32 accumulators per row.
template <int R>
struct Acc {
  const Q8Block* x[R];
  __m256 acc[R];
  float offs[R];

  void sgn(int64_t c, __m256i q, __m256 dw) {
    for (int r = 0; r < R; ++r) {
      const Q8Block& b = x[r][c];
      const __m256 p = _mm256_cvtepi32_ps(mul_sum_ss(q, load32(b.q)));
      acc[r] = _mm256_fmadd_ps(p, _mm256_mul_ps(dw, _mm256_set1_ps(b.d)), acc[r]);
    }
  }
  void off(int64_t c, __m256i q, float dw, float mw) {
    for (int r = 0; r < R; ++r) {
      const Q8Block& b = x[r][c];
      const __m256 p = _mm256_cvtepi32_ps(mul_sum_us(q, load32(b.q)));
      acc[r] = _mm256_fmadd_ps(p, _mm256_set1_ps(dw * b.d), acc[r]);
      offs[r] += mw * b.s;
    }
  }
};


}  // namespace rlx::cpu::qdot

#endif
