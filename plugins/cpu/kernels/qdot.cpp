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
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "../error.h"
#include "../thread_pool.h"
#include "rlx/quant.h"

namespace rlx::cpu {
namespace {

struct Q8Block {
  float d;  // x[e] ~ d * q[e]
  float s;  // d * sum(q)
  int8_t q[32];
};

// Bytes of the split (XRow) copy of `blocks` Q8Blocks: 32 values, the scale and the sum each.
constexpr size_t xrows_bytes(int64_t blocks) { return static_cast<size_t>(blocks) * (32 + 8); }

constexpr int64_t kBlockM = 64;
constexpr int64_t kTileN = 16;

void quantize_row(const float* x, Q8Block* out, int64_t k) {
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

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Every weight type is a visitor over a row's 32-element chunks: it calls
//   v.sgn(c, q, dw)      signed bytes q, w = dw * q (dw per int32 lane: Q6_K's two scales), or
//   v.off(c, q, dw, mw)  unsigned bytes q, w = dw * q + mw.
// The GEMV accumulator (Acc) and the GEMM tile packer (Pack) are the two visitors.

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

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
// GEMM (prefill) on AVX-512 VNNI: 16 weight rows are unpacked into a tile laid out for
// vpdpbusd: for chunk c and byte group g (4 consecutive k), one 64-byte vector holds those 4
// unsigned bytes of all 16 rows, so one instruction multiplies them with 4 bytes of one x row
// (broadcast) into 16 int32 sums, one per weight row; scales are applied per chunk as vectors
// over the 16 rows, and the 16 results of an x row land contiguous in `out`.
constexpr int64_t kTileRows = 16;

struct Tile {
  std::vector<uint8_t> q;  // [chunk][group 8][row 16][4]
  std::vector<float> d;    // [chunk][row 16]: w = d * q + m
  std::vector<float> m;
  void resize(int64_t nb) {
    q.assign(static_cast<size_t>(nb * 8 * kTileRows * 4), 0);
    d.assign(static_cast<size_t>(nb * kTileRows), 0.0f);
    m.assign(static_cast<size_t>(nb * kTileRows), 0.0f);
  }
};

struct Pack {
  Tile* t;
  int row;
  void off(int64_t c, __m256i q, float dw, float mw) {
    alignas(32) uint32_t g[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(g), q);
    uint32_t* dst = reinterpret_cast<uint32_t*>(t->q.data()) + c * 8 * kTileRows + row;
    for (int i = 0; i < 8; ++i) dst[i * kTileRows] = g[i];
    t->d[c * kTileRows + row] = dw;
    t->m[c * kTileRows + row] = mw;
  }
  // Signed bytes become unsigned (q + 128) with the offset -128 dw (Q8_0 only: one dw).
  void sgn(int64_t c, __m256i q, __m256 dw) {
    const float d = _mm256_cvtss_f32(dw);
    off(c, _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))), d, -128.0f * d);
  }
};

template <int R>
inline void tile_rows(const Tile& t, const Q8Block* xq, int64_t nb, int64_t i, float* out,
                      int64_t n, int64_t j0, int64_t cols) {
  __m512 f[R];
  for (int r = 0; r < R; ++r) f[r] = _mm512_setzero_ps();
  const __m512i* wq = reinterpret_cast<const __m512i*>(t.q.data());
  for (int64_t c = 0; c < nb; ++c) {
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int g = 0; g < 8; ++g) {
      const __m512i wv = _mm512_loadu_si512(wq + c * 8 + g);
      for (int r = 0; r < R; ++r) {
        int32_t xg;
        std::memcpy(&xg, xq[(i + r) * nb + c].q + 4 * g, 4);
        acc[r] = _mm512_dpbusd_epi32(acc[r], wv, _mm512_set1_epi32(xg));
      }
    }
    const __m512 dv = _mm512_loadu_ps(t.d.data() + c * kTileRows);
    const __m512 mv = _mm512_loadu_ps(t.m.data() + c * kTileRows);
    for (int r = 0; r < R; ++r) {
      const Q8Block& b = xq[(i + r) * nb + c];
      f[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r]), _mm512_mul_ps(dv, _mm512_set1_ps(b.d)),
                             f[r]);
      f[r] = _mm512_fmadd_ps(mv, _mm512_set1_ps(b.s), f[r]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << cols) - 1u);
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(out + (i + r) * n + j0, keep, f[r]);
}

template <class T>
void gemm_tile(Tile& t, const uint8_t* w, int64_t wrow, const Q8Block* xq, int64_t nb, int64_t m,
               int64_t j0, int64_t j1, int64_t n, float* out) {
  t.resize(nb);
  for (int64_t j = j0; j < j1; ++j) {
    Pack p{&t, static_cast<int>(j - j0)};
    visit_row<T>(w + j * wrow, nb, p);
  }
  const int64_t cols = j1 - j0;
  int64_t i = 0;
  for (; i + 6 <= m; i += 6) tile_rows<6>(t, xq, nb, i, out, n, j0, cols);
  for (; i < m; ++i) tile_rows<1>(t, xq, nb, i, out, n, j0, cols);
}

template <class T>  // one scale per 32-chunk and no second product
constexpr bool kTileable = !std::is_same_v<T, Q6_K> && !std::is_same_v<T, Q3_K> &&
                           !std::is_same_v<T, Q2_K>;
constexpr int64_t kGemmMinRows = 8;

// Decode (GEMV) on AVX-512 VNNI for the common types, four or eight chunks per step: the x row
// is split into its int8 values, scales and sums (XRow, contiguous), so one 64-byte load feeds
// a vpdpbusd over two chunks, and the per-chunk scales are 4 or 8 floats at once, spread over
// the lanes with one permute. About a third of the instructions of the row visitor per chunk,
// which matters: at 2 threads decode is bound by instructions per byte, not by DRAM.
struct XRow {
  const int8_t* q;  // [nb][32]
  const float* d;   // [nb]
  const float* s;   // [nb], d * sum(q)
};

inline __m128 f16x4(const uint8_t* w, int64_t stride) {
  uint16_t h[4];
  for (int i = 0; i < 4; ++i) std::memcpy(&h[i], w + i * stride, 2);
  return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(h)));
}
inline __m512 spread(__m128 v, __m512i idx) {
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
}
inline __m512i rep_idx(int first, int each) {  // lanes: first, first (each times), first + 1, ...
  alignas(64) int32_t i[16];
  for (int l = 0; l < 16; ++l) i[l] = first + l / each;
  return _mm512_load_si512(i);
}
inline float hsum(__m128 v) {
  v = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(v, _mm_movehdup_ps(v)));
}

// Whatever a fast kernel leaves over (nb % 4 chunks): the visitor, one chunk at a time.
template <class T>
float gemv_tail(const uint8_t* w, const Q8Block* xb, int64_t c0, int64_t nb) {
  Acc<1> a;
  a.x[0] = xb;
  a.acc[0] = _mm256_setzero_ps();
  a.offs[0] = 0.0f;
  for (int64_t c = c0; c < nb; c += T::kChunks, w += T::kBytes) T::visit(w, c, a);
  return hsum(a.acc[0]) + a.offs[0];
}

float gemv_q4_0(const uint8_t* w, XRow x, const Q8Block* xb, int64_t nb) {
  const __m512i lo4 = _mm512_set1_epi8(0x0f), idx = rep_idx(0, 4);
  __m512 acc = _mm512_setzero_ps();
  __m128 off = _mm_setzero_ps();
  int64_t c = 0;
  for (; c + 4 <= nb; c += 4, w += 4 * 18) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1024, _MM_HINT_T0);
    auto nib = [&](int i) {  // chunk i's 16 bytes of nibbles
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 18 * i + 2));
    };
    __m512i n = _mm512_castsi128_si512(nib(0));
    n = _mm512_inserti32x4(n, nib(1), 1);
    n = _mm512_inserti32x4(n, nib(2), 2);
    n = _mm512_inserti32x4(n, nib(3), 3);
    const __m512i lo = _mm512_and_si512(n, lo4);                         // elements 0..15
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(n, 4), lo4);  // elements 16..31
    const __m512i xa = _mm512_loadu_si512(x.q + c * 32), xb2 = _mm512_loadu_si512(x.q + c * 32 + 64);
    const __m512i p = _mm512_dpbusd_epi32(
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_shuffle_i64x2(xa, xb2, 0x88)), hi,
        _mm512_shuffle_i64x2(xa, xb2, 0xdd));
    const __m128 dw = f16x4(w, 18);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), spread(_mm_mul_ps(dw, _mm_loadu_ps(x.d + c)), idx),
                          acc);
    off = _mm_fmadd_ps(_mm_mul_ps(dw, _mm_set1_ps(-8.0f)), _mm_loadu_ps(x.s + c), off);
  }
  return _mm512_reduce_add_ps(acc) + hsum(off) + gemv_tail<Q4_0>(w, xb, c, nb);
}

float gemv_q8_0(const uint8_t* w, XRow x, const Q8Block* xb, int64_t nb) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i idx01 = rep_idx(0, 8), idx23 = rep_idx(2, 8);
  __m512 acc = _mm512_setzero_ps();
  __m128 off = _mm_setzero_ps();
  auto pair = [](const uint8_t* a, const uint8_t* b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(a)), load32(b), 1);
  };
  int64_t c = 0;
  for (; c + 4 <= nb; c += 4, w += 4 * 34) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1024, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1088, _MM_HINT_T0);
    // q + 128 is unsigned; the extra 128 * sum(x) comes off through the offset.
    const __m512i w01 = _mm512_xor_si512(pair(w + 2, w + 36), flip);
    const __m512i w23 = _mm512_xor_si512(pair(w + 70, w + 104), flip);
    const __m512i p01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w01,
                                            _mm512_loadu_si512(x.q + c * 32));
    const __m512i p23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w23,
                                            _mm512_loadu_si512(x.q + c * 32 + 64));
    const __m128 dw = f16x4(w, 34);
    const __m128 sc = _mm_mul_ps(dw, _mm_loadu_ps(x.d + c));
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p01), spread(sc, idx01), acc);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p23), spread(sc, idx23), acc);
    off = _mm_fmadd_ps(_mm_mul_ps(dw, _mm_set1_ps(-128.0f)), _mm_loadu_ps(x.s + c), off);
  }
  return _mm512_reduce_add_ps(acc) + hsum(off) + gemv_tail<Q8_0>(w, xb, c, nb);
}

float gemv_q4_k(const uint8_t* w, XRow x, const Q8Block*, int64_t nb) {
  const __m256i lo4 = _mm256_set1_epi8(0x0f);
  const __m512i idx[4] = {rep_idx(0, 8), rep_idx(2, 8), rep_idx(4, 8), rep_idx(6, 8)};
  __m512 acc = _mm512_setzero_ps();
  __m256 off = _mm256_setzero_ps();
  for (int64_t c = 0; c < nb; c += 8, w += 144) {
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1024, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1088, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(w) + 1152, _MM_HINT_T0);
    const float d = f16(w), dmin = f16(w + 2);
    uint32_t a, b, e;  // the 12 scale bytes (see quant::k4_scale_min), four at a time
    std::memcpy(&a, w + 4, 4);
    std::memcpy(&b, w + 8, 4);
    std::memcpy(&e, w + 12, 4);
    const uint64_t sc = (a & 0x3f3f3f3fu) |
                        static_cast<uint64_t>((e & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u)) << 32;
    const uint64_t mn = (b & 0x3f3f3f3fu) |
                        static_cast<uint64_t>(((e >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u))
                            << 32;
    auto floats = [](uint64_t v) {
      return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(v))));
    };
    const __m256 s8 = _mm256_mul_ps(_mm256_mul_ps(floats(sc), _mm256_set1_ps(d)),
                                    _mm256_loadu_ps(x.d + c));
    off = _mm256_fmadd_ps(_mm256_mul_ps(floats(mn), _mm256_set1_ps(-dmin)),
                          _mm256_loadu_ps(x.s + c), off);
    const __m512 s16 = _mm512_castps256_ps512(s8);
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = load32(w + 16 + 32 * j);
      const __m512i q = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_and_si256(raw, lo4)),
          _mm256_and_si256(_mm256_srli_epi16(raw, 4), lo4), 1);  // chunks 2j, 2j + 1
      const __m512i p =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, _mm512_loadu_si512(x.q + (c + 2 * j) * 32));
      acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx[j], s16), acc);
    }
  }
  __m128 o = _mm_add_ps(_mm256_castps256_ps128(off), _mm256_extractf128_ps(off, 1));
  return _mm512_reduce_add_ps(acc) + hsum(o);
}

using GemvFn = float (*)(const uint8_t*, XRow, const Q8Block*, int64_t);
template <class T>
constexpr GemvFn kGemv = std::is_same_v<T, Q4_0>          ? gemv_q4_0
                         : std::is_same_v<T, Q8_0>        ? gemv_q8_0
                         : std::is_same_v<T, QK45<false>> ? gemv_q4_k
                                                          : nullptr;

// The decode x rows as XRow arrays (the Q8Block rows give the values; this only re-lays them),
// in caller-provided memory of xrows_bytes(m * nb).
struct XRows {
  int8_t* q;
  float *d, *s;
  XRows(const Q8Block* xq, int64_t blocks, void* mem)
      : q(static_cast<int8_t*>(mem)),
        d(reinterpret_cast<float*>(q + blocks * 32)),
        s(d + blocks) {
    for (int64_t i = 0; i < blocks; ++i) {
      std::memcpy(q + i * 32, xq[i].q, 32);
      d[i] = xq[i].d;
      s[i] = xq[i].s;
    }
  }
  XRow row(int64_t i, int64_t nb) const { return {q + i * nb * 32, d + i * nb, s + i * nb}; }
};
#endif

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
  if constexpr (kGemv<T> != nullptr) {
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
  const int64_t tiles_m = (m + kBlockM - 1) / kBlockM;
  const int64_t tiles_n = (n + kTileN - 1) / kTileN;
  pool.parallel_for(tiles_m * tiles_n, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i0 = (t / tiles_n) * kBlockM, i1 = std::min(m, i0 + kBlockM);
      const int64_t j0 = (t % tiles_n) * kTileN, j1 = std::min(n, j0 + kTileN);
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

// f16 / bf16 weights, few x rows: each weight row converted 8 values at a time in registers
// (F16C vcvtph2ps; bf16 is the high half of an f32) and fused into the f32 dot product, so
// decode reads 2 bytes per weight once with no f32 tile.
namespace {
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

#else  // no AVX2: the dequantizing path (quant.cpp) serves every dtype

namespace rlx::cpu {
bool matmul_q8_supported(uint32_t, int64_t) { return false; }
void matmul_q8(ThreadPool&, Scratch&, const float*, const uint8_t*, uint32_t, float*, int64_t,
               int64_t, int64_t) {}
bool gemv_16bit_supported(uint32_t) { return false; }
void gemv_16bit(ThreadPool&, const float*, const uint8_t*, uint32_t, float*, int64_t, int64_t,
                int64_t) {}
}  // namespace rlx::cpu

#endif
