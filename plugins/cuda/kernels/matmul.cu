// MATMUL: out [m, n] = x [m, k] @ w [n, k]^T, w f32 / f16 / bf16 or a GGUF block type read in
// place (the dequant-matmul).
//
// Decode (m <= 8): GEMV, one block of 128 threads per weight row, reading the row once for all
// m x rows (accumulators in registers, templated on a bound MM >= m), then a block reduction.
//   - block types with caps.int8_act (and 4-aligned w and a scratch buffer): x is quantized once
//     per call into the scratch (quant.cuh's int8 blocks of 32), then each thread takes "units"
//     of a weight block (8 to 32 elements, 8 to 24 bytes, contiguous across threads) with 32-bit
//     loads and dp4a products, scaled per block in f32 (the cpu qdot's math).
//   - otherwise: the exact path, weights dequantized to registers (quant.cuh), f32 x and sums.
// Prefill (m > 8): a 64 x 64 output tile per block of 256 threads, K step 32: the x tile (f32)
// and the weight tile (dequantized) staged in shared memory, then either wmma 16x16x16 (f16
// inputs, f32 accumulation; caps.tensor_cores and a non-f32 weight) or a SIMT loop with 4 x 4
// outputs per thread (exact f32).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels.h"
#include "quant.cuh"
#include "rlx/quant.h"

namespace rlx::gpu {
namespace {

using q::ld16;
using q::ld32;
using q::ld32_a2;

constexpr int kGemvThreads = 128;
constexpr int kGemvMaxM = 8;
constexpr int kTile = 64, kTileK = 32, kGemmThreads = 256;

// ---- int8 activations ----------------------------------------------------------------------

// The quantized x: q int8 [m, k], ds (d, d * sum) float pairs [m, k / 32].
struct XQ {
  const int8_t* q;
  const float* ds;
  int k, nb;
};

RLX_DEV int xi(const XQ& x, int r, int e) { return static_cast<int>(ld32(x.q + r * x.k + e)); }
RLX_DEV float xd(const XQ& x, int r, int c) { return x.ds[2 * (r * x.nb + c)]; }
RLX_DEV float xs(const XQ& x, int r, int c) { return x.ds[2 * (r * x.nb + c) + 1]; }
// Sum of the 8 int8 x values at e .. e + 7.
RLX_DEV int xsum8(const XQ& x, int r, int e) {
  return dp4a(0x01010101, xi(x, r, e), dp4a(0x01010101, xi(x, r, e + 4), 0));
}
// dot of 8 weight bytes (w0, w1) with x[e .. e + 8).
RLX_DEV int dot8(int w0, int w1, const XQ& x, int r, int e) {
  return dp4a(w0, xi(x, r, e), dp4a(w1, xi(x, r, e + 4), 0));
}

// One thread per element; a block of 32 spans 32 consecutive lanes (grid of 256-thread blocks).
RLX_GLOBAL void quantize_x(const float* x, int8_t* xq, float* ds, int total) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const bool live = t < total;  // total is a multiple of 32: a 32-lane group is all in or out
  int qv;
  float d, s;
  q::quantize_act32(live ? x[t] : 0.0f, qv, d, s);
  if (live) {
    xq[t] = static_cast<int8_t>(qv);
    if ((t & 31) == 0) {
      ds[2 * (t >> 5)] = d;
      ds[2 * (t >> 5) + 1] = s;
    }
  }
}

// Low 4 bits of v -> bit 4 of bytes 0..3 (the 5th bit of Q5 nibbles).
RLX_DEV int spread4(uint32_t v) {
  return static_cast<int>((v & 1u) << 4 | (v & 2u) << 11 | (v & 4u) << 18 | (v & 8u) << 25);
}

constexpr uint32_t kLo4 = 0x0f0f0f0fu;

// Per weight type: units of a block, unit(row, u, x, m, acc) adds unit u's share to acc[r]
// for the x rows r < m. D::kAlign: the alignment the loads need of the row.

// Q4_0 (18 bytes): unit t < 2 = qs bytes 8t .. 8t+7 (elements 8t.. low, 16 + 8t.. high).
struct DQ4_0 {
  static constexpr int kBlock = 32, kBytes = 18, kUnits = 2;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 1, t = u & 1;
    const uint8_t* b = row + bi * kBytes;
    const float d = half_to_float(static_cast<uint16_t>(ld16(b)));
    const uint32_t v0 = ld32_a2(b + 2 + 8 * t), v1 = ld32_a2(b + 6 + 8 * t);
    const int l0 = v0 & kLo4, l1 = v1 & kLo4, h0 = (v0 >> 4) & kLo4, h1 = (v1 >> 4) & kLo4;
    const int e = bi * 32 + 8 * t;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
      const int p = dot8(l0, l1, x, r, e) + dot8(h0, h1, x, r, e + 16);
      acc[r] += static_cast<float>(p) * (d * xd(x, r, bi));
      if (t == 0) acc[r] += (-8.0f * d) * xs(x, r, bi);
    }
  }
};

// Q4_1 (20 bytes): as Q4_0, w = d q + m.
struct DQ4_1 {
  static constexpr int kBlock = 32, kBytes = 20, kUnits = 2;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 1, t = u & 1;
    const uint8_t* b = row + bi * kBytes;
    const uint32_t dm = ld32(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                mw = half_to_float(static_cast<uint16_t>(dm >> 16));
    const uint32_t v0 = ld32(b + 4 + 8 * t), v1 = ld32(b + 8 + 8 * t);
    const int l0 = v0 & kLo4, l1 = v1 & kLo4, h0 = (v0 >> 4) & kLo4, h1 = (v1 >> 4) & kLo4;
    const int e = bi * 32 + 8 * t;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
      const int p = dot8(l0, l1, x, r, e) + dot8(h0, h1, x, r, e + 16);
      acc[r] += static_cast<float>(p) * (d * xd(x, r, bi));
      if (t == 0) acc[r] += mw * xs(x, r, bi);
    }
  }
};

// Q5_0 (22 bytes) / Q5_1 (24 bytes): nibbles plus bit e of qh as bit 4.
template <bool kOne>
struct DQ5 {
  static constexpr int kBlock = 32, kBytes = kOne ? 24 : 22, kUnits = 2;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 1, t = u & 1;
    const uint8_t* b = row + bi * kBytes;
    float d, mw;
    if constexpr (kOne) {
      d = half_to_float(static_cast<uint16_t>(ld16(b)));
      mw = half_to_float(static_cast<uint16_t>(ld16(b + 2)));
    } else {
      d = half_to_float(static_cast<uint16_t>(ld16(b)));
      mw = -16.0f * d;
    }
    const uint8_t* p8 = b + (kOne ? 4 : 2);
    const uint32_t qh = ld32_a2(p8);
    const uint32_t v0 = ld32_a2(p8 + 4 + 8 * t), v1 = ld32_a2(p8 + 8 + 8 * t);
    const int s = 8 * t;
    const int l0 = (v0 & kLo4) | spread4(qh >> s), l1 = (v1 & kLo4) | spread4(qh >> (s + 4));
    const int h0 = ((v0 >> 4) & kLo4) | spread4(qh >> (s + 16));
    const int h1 = ((v1 >> 4) & kLo4) | spread4(qh >> (s + 20));
    const int e = bi * 32 + 8 * t;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
      const int p = dot8(l0, l1, x, r, e) + dot8(h0, h1, x, r, e + 16);
      acc[r] += static_cast<float>(p) * (d * xd(x, r, bi));
      if (t == 0) acc[r] += mw * xs(x, r, bi);
    }
  }
};

// Q8_0 (34 bytes): unit t < 2 = elements 16t .. 16t + 15.
struct DQ8_0 {
  static constexpr int kBlock = 32, kBytes = 34, kUnits = 2;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 1, t = u & 1;
    const uint8_t* b = row + bi * kBytes;
    const float d = half_to_float(static_cast<uint16_t>(ld16(b)));
    const uint8_t* qs = b + 2 + 16 * t;
    const int w0 = ld32_a2(qs), w1 = ld32_a2(qs + 4), w2 = ld32_a2(qs + 8), w3 = ld32_a2(qs + 12);
    const int e = bi * 32 + 16 * t;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
      const int p = dot8(w0, w1, x, r, e) + dot8(w2, w3, x, r, e + 8);
      acc[r] += static_cast<float>(p) * (d * xd(x, r, bi));
    }
  }
};

// Q4_K (144) / Q5_K (176): unit t < 16: j = t / 4, l0 = 8 (t % 4); qs bytes 32 j + l0 .. + 7
// give elements 64 j + l0 .. (sub-block 2j, low nibbles) and 64 j + 32 + l0 .. (2j + 1, high).
template <bool kFive>
struct DQK45 {
  static constexpr int kBlock = 256, kBytes = kFive ? 176 : 144, kUnits = 16;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 4, t = u & 15, j = t >> 2, l0 = 8 * (t & 3);
    const uint8_t* b = row + bi * kBytes;
    const uint32_t dm = ld32(b);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                dmin = half_to_float(static_cast<uint16_t>(dm >> 16));
    int sca, mna, scb, mnb;
    q::k4_scale_min(b + 4, 2 * j, sca, mna);
    q::k4_scale_min(b + 4, 2 * j + 1, scb, mnb);
    const float dla = d * static_cast<float>(sca), mla = dmin * static_cast<float>(mna);
    const float dlb = d * static_cast<float>(scb), mlb = dmin * static_cast<float>(mnb);
    const uint8_t* qs = b + (kFive ? 48 : 16) + 32 * j + l0;
    const uint32_t v0 = ld32(qs), v1 = ld32(qs + 4);
    int a0 = v0 & kLo4, a1 = v1 & kLo4, c0 = (v0 >> 4) & kLo4, c1 = (v1 >> 4) & kLo4;
    if constexpr (kFive) {
      const uint32_t h0 = ld32(b + 16 + l0), h1 = ld32(b + 20 + l0);
      const int sa = 2 * j, sb = 2 * j + 1;
      a0 |= static_cast<int>(((h0 >> sa) & 0x01010101u) << 4);
      a1 |= static_cast<int>(((h1 >> sa) & 0x01010101u) << 4);
      c0 |= static_cast<int>(((h0 >> sb) & 0x01010101u) << 4);
      c1 |= static_cast<int>(((h1 >> sb) & 0x01010101u) << 4);
    }
    const int ea = bi * 256 + 64 * j + l0, ca = bi * 8 + 2 * j;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
      const int pa = dot8(a0, a1, x, r, ea), pb = dot8(c0, c1, x, r, ea + 32);
      acc[r] += static_cast<float>(pa) * (dla * xd(x, r, ca)) +
                static_cast<float>(pb) * (dlb * xd(x, r, ca + 1));
      if (l0 == 0) acc[r] -= mla * xs(x, r, ca) + mlb * xs(x, r, ca + 1);
    }
  }
};

// Q6_K (210 bytes): unit t < 8: h = t / 4, l0 = 8 (t % 4): elements 128 h + 32 c + l0 .. + 7
// for c < 4 (ql bytes 64 h + l0 and 64 h + 32 + l0, qh bytes 32 h + l0).
struct DQ6_K {
  static constexpr int kBlock = 256, kBytes = 210, kUnits = 8;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 3, t = u & 7, h = t >> 2, l0 = 8 * (t & 3);
    const uint8_t* b = row + bi * kBytes;
    const float d = half_to_float(static_cast<uint16_t>(ld16(b + 208)));
    const uint8_t* ql = b + 64 * h + l0;
    const uint32_t qa0 = ld32_a2(ql), qa1 = ld32_a2(ql + 4);
    const uint32_t qb0 = ld32_a2(ql + 32), qb1 = ld32_a2(ql + 36);
    const uint32_t qh0 = ld32_a2(b + 128 + 32 * h + l0), qh1 = ld32_a2(b + 132 + 32 * h + l0);
    int w[4][2];
    float dl[4];
RLX_UNROLL
    for (int c = 0; c < 4; ++c) {
      const int sh = 4 * (c >> 1);
      const uint32_t lo0 = ((c & 1) ? qb0 : qa0) >> sh, lo1 = ((c & 1) ? qb1 : qa1) >> sh;
      w[c][0] = static_cast<int>(
          q::sub_bytes((lo0 & kLo4) | ((qh0 >> (2 * c)) & 0x03030303u) << 4, 0x20202020u));
      w[c][1] = static_cast<int>(
          q::sub_bytes((lo1 & kLo4) | ((qh1 >> (2 * c)) & 0x03030303u) << 4, 0x20202020u));
      const int s = 8 * h + 2 * c + (l0 >= 16 ? 1 : 0);
      dl[c] = d * static_cast<float>(static_cast<int8_t>(b[192 + s]));
    }
    const int e = bi * 256 + 128 * h + l0, cb = bi * 8 + 4 * h;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
RLX_UNROLL
      for (int c = 0; c < 4; ++c) {
        const int p = dot8(w[c][0], w[c][1], x, r, e + 32 * c);
        acc[r] += static_cast<float>(p) * (dl[c] * xd(x, r, cb + c));
      }
    }
  }
};

// Q3_K (110 bytes): unit t < 8 as Q6_K: qs bytes 32 + 32 h + l0, hmask bytes l0 (bit 4 h + j).
struct DQ3_K {
  static constexpr int kBlock = 256, kBytes = 110, kUnits = 8;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 3, t = u & 7, h = t >> 2, l0 = 8 * (t & 3);
    const uint8_t* b = row + bi * kBytes;
    const float d = half_to_float(static_cast<uint16_t>(ld16(b + 108)));
    const uint32_t q0 = ld32_a2(b + 32 + 32 * h + l0), q1 = ld32_a2(b + 36 + 32 * h + l0);
    const uint32_t m0 = ld32_a2(b + l0), m1 = ld32_a2(b + 4 + l0);
    int w[4][2];
    float dl[4];
RLX_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int bit = 4 * h + j;
      w[j][0] = static_cast<int>(q::sub_bytes(
          ((q0 >> (2 * j)) & 0x03030303u) | ((m0 >> bit) & 0x01010101u) << 2, 0x04040404u));
      w[j][1] = static_cast<int>(q::sub_bytes(
          ((q1 >> (2 * j)) & 0x03030303u) | ((m1 >> bit) & 0x01010101u) << 2, 0x04040404u));
      dl[j] = d * static_cast<float>(q::q3k_scale(b + 96, 8 * h + 2 * j + (l0 >= 16 ? 1 : 0)));
    }
    const int e = bi * 256 + 128 * h + l0, cb = bi * 8 + 4 * h;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
RLX_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int p = dot8(w[j][0], w[j][1], x, r, e + 32 * j);
        acc[r] += static_cast<float>(p) * (dl[j] * xd(x, r, cb + j));
      }
    }
  }
};

// Q2_K (84 bytes): unit t < 8 as Q6_K: qs bytes 16 + 32 h + l0; per 16 elements a 4-bit scale and
// min; the min term uses the 8 x values' own sum.
struct DQ2_K {
  static constexpr int kBlock = 256, kBytes = 84, kUnits = 8;
  template <int MM>
  RLX_DEV static void unit(const uint8_t* row, int u, const XQ& x, int m, float* acc) {
    const int bi = u >> 3, t = u & 7, h = t >> 2, l0 = 8 * (t & 3);
    const uint8_t* b = row + bi * kBytes;
    const uint32_t dm = ld32(b + 80);
    const float d = half_to_float(static_cast<uint16_t>(dm)),
                dmin = half_to_float(static_cast<uint16_t>(dm >> 16));
    const uint32_t q0 = ld32(b + 16 + 32 * h + l0), q1 = ld32(b + 20 + 32 * h + l0);
    int w[4][2];
    float dl[4], ml[4];
RLX_UNROLL
    for (int j = 0; j < 4; ++j) {
      w[j][0] = static_cast<int>((q0 >> (2 * j)) & 0x03030303u);
      w[j][1] = static_cast<int>((q1 >> (2 * j)) & 0x03030303u);
      const int sc = b[8 * h + 2 * j + (l0 >= 16 ? 1 : 0)];
      dl[j] = d * static_cast<float>(sc & 0x0f);
      ml[j] = dmin * static_cast<float>(sc >> 4);
    }
    const int e = bi * 256 + 128 * h + l0, cb = bi * 8 + 4 * h;
RLX_UNROLL
    for (int r = 0; r < MM; ++r) {
      if (r >= m) continue;
RLX_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int p = dot8(w[j][0], w[j][1], x, r, e + 32 * j);
        const int sx = xsum8(x, r, e + 32 * j);
        acc[r] += xd(x, r, cb + j) *
                  (static_cast<float>(p) * dl[j] - static_cast<float>(sx) * ml[j]);
      }
    }
  }
};

// ---- GEMV kernels (m <= 8): one block per weight row ----------------------------------------

// Sum acc[r] over the block; thread r < m writes out[r * n + row]. Needs `red` [8][8].
#define RLX_GEMV_REDUCE(red)                                                        \
  do {                                                                              \
    const int lane_ = static_cast<int>(threadIdx.x) % RLX_WARP;                     \
    const int warp_ = static_cast<int>(threadIdx.x) / RLX_WARP;                     \
    const int nwarps_ = static_cast<int>(blockDim.x) / RLX_WARP;                    \
    RLX_UNROLL for (int r_ = 0; r_ < MM; ++r_) {                             \
      const float v_ = warp_sum(acc[r_]);                                           \
      if (lane_ == 0) red[r_][warp_] = v_;                                          \
    }                                                                               \
    __syncthreads();                                                                \
    const int t_ = static_cast<int>(threadIdx.x);                                   \
    if (t_ < m) {                                                                   \
      float s_ = 0.0f;                                                              \
      for (int w_ = 0; w_ < nwarps_; ++w_) s_ += red[t_][w_];                       \
      out[static_cast<int64_t>(t_) * n + row] = s_;                                 \
    }                                                                               \
  } while (0)

template <class D, int MM>
RLX_GLOBAL void gemv_q8(const uint8_t* w, int64_t rb, XQ x, float* out, int m, int n) {
  __shared__ float red[kGemvMaxM][8];
  const int row = static_cast<int>(blockIdx.x);
  const uint8_t* wr = w + static_cast<int64_t>(row) * rb;
  float acc[MM];
RLX_UNROLL
  for (int r = 0; r < MM; ++r) acc[r] = 0.0f;
  const int units = (x.k / D::kBlock) * D::kUnits;
  for (int u = static_cast<int>(threadIdx.x); u < units; u += static_cast<int>(blockDim.x))
    D::template unit<MM>(wr, u, x, m, acc);
  RLX_GEMV_REDUCE(red);
}

// Exact: dequantized weights, f32 x, f32 sums.
template <uint32_t DT, int MM>
RLX_GLOBAL void gemv_f32(const uint8_t* w, int64_t rb, const float* x, float* out, int m, int n,
                         int k) {
  using T = q::W<DT>;
  __shared__ float red[kGemvMaxM][8];
  const int row = static_cast<int>(blockIdx.x);
  const uint8_t* wr = w + static_cast<int64_t>(row) * rb;
  float acc[MM];
RLX_UNROLL
  for (int r = 0; r < MM; ++r) acc[r] = 0.0f;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  if constexpr (T::kBlock > 1) {
    for (int u = tid; u < k / 8; u += nt) {
      float y[8];
      T::deq8(wr, 8 * u, y);
RLX_UNROLL
      for (int r = 0; r < MM; ++r) {
        if (r >= m) continue;
        const float* xr = x + r * k + 8 * u;
        float s = 0.0f;
RLX_UNROLL
        for (int i = 0; i < 8; ++i) s += y[i] * xr[i];
        acc[r] += s;
      }
    }
  } else {
    for (int e = tid; e < k; e += nt) {
      const float wv = T::at(wr, e);
RLX_UNROLL
      for (int r = 0; r < MM; ++r) {
        if (r >= m) continue;
        acc[r] += wv * x[r * k + e];
      }
    }
  }
  RLX_GEMV_REDUCE(red);
}

#undef RLX_GEMV_REDUCE

// ---- GEMM kernels (m > 8): 64 x 64 tiles, 256 threads ---------------------------------------

// The weight tile's share of thread tid: row tid / 4 of the tile, elements 8 (tid % 4) .. + 7
// of the K step at k0 (zeros past n, and past k for the float types).
template <uint32_t DT>
RLX_DEV void load_w8(const uint8_t* w, int64_t rb, int n, int k, int j0, int k0, int tid,
                     float* y) {
  using T = q::W<DT>;
  const int j = j0 + (tid >> 2), e0 = k0 + 8 * (tid & 3);
  if (j >= n) {
    for (int i = 0; i < 8; ++i) y[i] = 0.0f;
    return;
  }
  const uint8_t* wr = w + static_cast<int64_t>(j) * rb;
  if constexpr (T::kBlock > 1) {
    T::deq8(wr, e0, y);
  } else {
    for (int i = 0; i < 8; ++i) y[i] = e0 + i < k ? T::at(wr, e0 + i) : 0.0f;
  }
}

RLX_DEV float load_x(const float* x, int m, int k, int i, int e) {
  return i < m && e < k ? x[static_cast<int64_t>(i) * k + e] : 0.0f;
}

template <uint32_t DT>
RLX_GLOBAL void gemm_simt(const float* x, const uint8_t* w, int64_t rb, float* out, int m, int n,
                          int k) {
  __shared__ float xs[kTile][kTileK + 1];
  __shared__ float ws[kTile][kTileK + 1];
  const int tid = static_cast<int>(threadIdx.x);
  const int i0 = static_cast<int>(blockIdx.y) * kTile, j0 = static_cast<int>(blockIdx.x) * kTile;
  const int tx = tid & 15, ty = tid >> 4;
  float acc[4][4];
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) acc[a][b] = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kTileK) {
RLX_UNROLL
    for (int p = 0; p < 8; ++p) {
      const int r = (tid >> 5) + 8 * p, c = tid & 31;
      xs[r][c] = load_x(x, m, k, i0 + r, k0 + c);
    }
    float y[8];
    load_w8<DT>(w, rb, n, k, j0, k0, tid, y);
RLX_UNROLL
    for (int i = 0; i < 8; ++i) ws[tid >> 2][8 * (tid & 3) + i] = y[i];
    __syncthreads();
RLX_UNROLL8
    for (int kk = 0; kk < kTileK; ++kk) {
      float a[4], b[4];
RLX_UNROLL
      for (int i = 0; i < 4; ++i) a[i] = xs[ty + 16 * i][kk];
RLX_UNROLL
      for (int j = 0; j < 4; ++j) b[j] = ws[tx + 16 * j][kk];
RLX_UNROLL
      for (int i = 0; i < 4; ++i)
RLX_UNROLL
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
RLX_UNROLL
  for (int i = 0; i < 4; ++i) {
    const int gi = i0 + ty + 16 * i;
    if (gi >= m) continue;
RLX_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int gj = j0 + tx + 16 * j;
      if (gj < n) out[static_cast<int64_t>(gi) * n + gj] = acc[i][j];
    }
  }
}

// Tensor cores: 8 warps (CUDA: 32 lanes), warp w computes rows 16 (w % 4) .. + 15 and columns
// 32 (w / 4) .. + 31 of the tile as two 16 x 16 accumulators. Compiled out where wmma is not.
template <uint32_t DT>
RLX_GLOBAL void gemm_wmma(const float* x, const uint8_t* w, int64_t rb, float* out, int m, int n,
                          int k) {
#if defined(RLX_GPU_WMMA)
  namespace wmma = nvcuda::wmma;
  constexpr int kLdh = kTileK + 8, kLdc = kTile + 4;
  alignas(32) __shared__ __half xh[kTile][kLdh];
  alignas(32) __shared__ __half wh[kTile][kLdh];
  alignas(32) __shared__ float cs[kTile][kLdc];
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32;
  const int i0 = static_cast<int>(blockIdx.y) * kTile, j0 = static_cast<int>(blockIdx.x) * kTile;
  const int wr = 16 * (warp & 3), wc = 32 * (warp >> 2);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c0, c1;
  wmma::fill_fragment(c0, 0.0f);
  wmma::fill_fragment(c1, 0.0f);
  for (int k0 = 0; k0 < k; k0 += kTileK) {
RLX_UNROLL
    for (int p = 0; p < 8; ++p) {
      const int r = (tid >> 5) + 8 * p, c = tid & 31;
      xh[r][c] = float_to_half(load_x(x, m, k, i0 + r, k0 + c));
    }
    float y[8];
    load_w8<DT>(w, rb, n, k, j0, k0, tid, y);
RLX_UNROLL
    for (int i = 0; i < 8; ++i) wh[tid >> 2][8 * (tid & 3) + i] = float_to_half(y[i]);
    __syncthreads();
RLX_UNROLL
    for (int ks = 0; ks < kTileK; ks += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b0, b1;
      wmma::load_matrix_sync(a, &xh[wr][ks], kLdh);
      wmma::load_matrix_sync(b0, &wh[wc][ks], kLdh);
      wmma::load_matrix_sync(b1, &wh[wc + 16][ks], kLdh);
      wmma::mma_sync(c0, a, b0, c0);
      wmma::mma_sync(c1, a, b1, c1);
    }
    __syncthreads();
  }
  wmma::store_matrix_sync(&cs[wr][wc], c0, kLdc, wmma::mem_row_major);
  wmma::store_matrix_sync(&cs[wr][wc + 16], c1, kLdc, wmma::mem_row_major);
  __syncthreads();
  for (int idx = tid; idx < kTile * kTile; idx += kGemmThreads) {
    const int r = idx / kTile, c = idx % kTile;
    if (i0 + r < m && j0 + c < n) out[static_cast<int64_t>(i0 + r) * n + (j0 + c)] = cs[r][c];
  }
#else
  (void)x, (void)w, (void)rb, (void)out, (void)m, (void)n, (void)k;
#endif
}

// ---- host dispatch ---------------------------------------------------------------------------

#if defined(RLX_GPU_WMMA) && !defined(RLX_GPU_HIP)
constexpr bool kHaveWmma = true;
#else
constexpr bool kHaveWmma = false;
#endif

bool is_block_type(uint32_t t) { return t >= RLX_Q4_0 && t <= RLX_Q6_K; }

int64_t wrow_bytes(uint32_t t, int64_t k) {
  return rlx::quant::row_bytes(static_cast<rlx_dtype>(t), k);
}

size_t align256(size_t b) { return (b + 255) & ~size_t{255}; }

bool use_int8(uint32_t t, int64_t m, int64_t k, const Caps& caps) {
  return caps.int8_act && is_block_type(t) && m >= 1 && m <= kGemvMaxM && k % 32 == 0 && k > 0;
}

template <class D, uint32_t DT>
void run_gemv_q8(const float* x, const uint8_t* w, int64_t rb, float* out, int m, int n, int k,
                 void* scratch, cudaStream_t s) {
  auto* xq = static_cast<int8_t*>(scratch);
  auto* ds = reinterpret_cast<float*>(static_cast<uint8_t*>(scratch) +
                                      align256(static_cast<size_t>(m) * k));
  const int total = m * k;
  launch(quantize_x, dim3((total + 255) / 256), dim3(256), s, x, xq, ds, total);
  const XQ xqv{xq, ds, k, k / 32};
  const dim3 grid(static_cast<unsigned>(n)), block(kGemvThreads);
  if (m == 1) launch(gemv_q8<D, 1>, grid, block, s, w, rb, xqv, out, m, n);
  else if (m == 2) launch(gemv_q8<D, 2>, grid, block, s, w, rb, xqv, out, m, n);
  else if (m <= 4) launch(gemv_q8<D, 4>, grid, block, s, w, rb, xqv, out, m, n);
  else launch(gemv_q8<D, 8>, grid, block, s, w, rb, xqv, out, m, n);
}

template <uint32_t DT>
void run_gemv_f32(const float* x, const uint8_t* w, int64_t rb, float* out, int m, int n, int k,
                  cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(n)), block(kGemvThreads);
  if (m == 1) launch(gemv_f32<DT, 1>, grid, block, s, w, rb, x, out, m, n, k);
  else if (m == 2) launch(gemv_f32<DT, 2>, grid, block, s, w, rb, x, out, m, n, k);
  else if (m <= 4) launch(gemv_f32<DT, 4>, grid, block, s, w, rb, x, out, m, n, k);
  else launch(gemv_f32<DT, 8>, grid, block, s, w, rb, x, out, m, n, k);
}

// D: the int8 dot of the type (void: none).
template <uint32_t DT, class D>
void run(const float* x, const void* wv, float* out, int64_t m, int64_t n, int64_t k,
         void* scratch, const Caps& caps, cudaStream_t s) {
  const auto* w = static_cast<const uint8_t*>(wv);
  const int64_t rb = wrow_bytes(DT, k);
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  if (m <= kGemvMaxM) {
    if constexpr (!std::is_void_v<D>) {
      if (use_int8(DT, m, k, caps) && scratch != nullptr &&
          (reinterpret_cast<uintptr_t>(w) & 3) == 0) {
        run_gemv_q8<D, DT>(x, w, rb, out, mi, ni, ki, scratch, s);
        return;
      }
    }
    run_gemv_f32<DT>(x, w, rb, out, mi, ni, ki, s);
    return;
  }
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  if (kHaveWmma && caps.tensor_cores && DT != RLX_F32)
    launch(gemm_wmma<DT>, grid, dim3(kGemmThreads), s, x, w, rb, out, mi, ni, ki);
  else
    launch(gemm_simt<DT>, grid, dim3(kGemmThreads), s, x, w, rb, out, mi, ni, ki);
}

}  // namespace

bool weight_supported(uint32_t dtype) {
  switch (dtype) {
    case RLX_F32:
    case RLX_F16:
    case RLX_BF16:
    case RLX_Q4_0:
    case RLX_Q4_1:
    case RLX_Q5_0:
    case RLX_Q5_1:
    case RLX_Q8_0:
    case RLX_Q2_K:
    case RLX_Q3_K:
    case RLX_Q4_K:
    case RLX_Q5_K:
    case RLX_Q6_K: return true;
    default: return false;
  }
}

size_t matmul_scratch_bytes(uint32_t wtype, int64_t m, int64_t k, const Caps& caps) {
  if (!use_int8(wtype, m, k, caps)) return 0;
  return align256(static_cast<size_t>(m * k)) + static_cast<size_t>(m * (k / 32)) * 8;
}

void matmul(const float* x, const void* w, uint32_t wtype, float* out, int64_t m, int64_t n,
            int64_t k, void* scratch, const Caps& caps, cudaStream_t s) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    (void)cudaMemsetAsync(out, 0, static_cast<size_t>(m * n) * sizeof(float), s);
    return;
  }
  switch (wtype) {
    case RLX_F32: run<RLX_F32, void>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_F16: run<RLX_F16, void>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_BF16: run<RLX_BF16, void>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q4_0: run<RLX_Q4_0, DQ4_0>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q4_1: run<RLX_Q4_1, DQ4_1>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q5_0: run<RLX_Q5_0, DQ5<false>>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q5_1: run<RLX_Q5_1, DQ5<true>>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q8_0: run<RLX_Q8_0, DQ8_0>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q2_K: run<RLX_Q2_K, DQ2_K>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q3_K: run<RLX_Q3_K, DQ3_K>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q4_K: run<RLX_Q4_K, DQK45<false>>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q5_K: run<RLX_Q5_K, DQK45<true>>(x, w, out, m, n, k, scratch, caps, s); break;
    case RLX_Q6_K: run<RLX_Q6_K, DQ6_K>(x, w, out, m, n, k, scratch, caps, s); break;
    default: break;
  }
}

}  // namespace rlx::gpu
