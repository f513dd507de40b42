// Internal to qdot.cpp: the AVX-512 VNNI kernels, the tiled prefill GEMM and the dedicated
// q4_0 / q8_0 / q4_k decode kernels. Built only into the avx512vnni variant.
#pragma once

#include "qdot_blocks.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__)
#include <type_traits>
#include <vector>

namespace rlx::cpu::qdot {

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

inline float gemv_q4_0(const uint8_t* w, XRow x, const Q8Block* xb, int64_t nb) {
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

inline float gemv_q8_0(const uint8_t* w, XRow x, const Q8Block* xb, int64_t nb) {
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

inline float gemv_q4_k(const uint8_t* w, XRow x, const Q8Block*, int64_t nb) {
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
// The types with a hand-written GEMV (a bool of its own: GCC's UBSan build cannot compare the
// function pointer below to nullptr in a constant expression).
template <class T>
constexpr bool kHasGemv = std::is_same_v<T, Q4_0> || std::is_same_v<T, Q8_0> ||
                          std::is_same_v<T, QK45<false>>;
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

}  // namespace rlx::cpu::qdot

#endif
