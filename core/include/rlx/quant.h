// Weight formats shared by the core and the backends: f16 / bf16 conversion and the GGUF (ggml)
// block-quantized types, with dequantizers bit-exact with ggml's and reference quantizers.
//
// Header-only and self-contained (the C ABI header and the C++ standard library), so a backend
// plugin includes it without linking the core. Nothing throws; bad arguments return false.
//
//   rlx::quant::dequantize_row(RLX_Q4_K, blocks, out_f32, n)   n a multiple of the block size
//   rlx::quant::quantize_row(RLX_Q4_K, in_f32, blocks, n)      reference quality (ggml *_ref-like)
//   rlx::quant::row_bytes(RLX_Q4_K, n)                          bytes of n elements, -1 if invalid
//
// All multi-byte fields are little-endian, as in GGUF files; this header assumes a little-endian
// host (every platform rlx targets). Blocks are read in place (any alignment, no copies).
//
// Bit-exact with ggml's dequantize_row_*: the same float operations in the same order. In every
// "a * q + b" form the product is exact in f32 (an f16 scale has an 11-bit significand, times
// integers of at most 6 + 5 bits), so the result is the same with or without FMA contraction.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "rlx/plugin_abi.h"

namespace rlx::quant {

// ---- scalar conversions --------------------------------------------------------------------

namespace detail {
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

// IEEE binary16 -> f32, exact for every input (subnormals, +-0, inf, NaN payloads). Branch-free
// (selects are masks) so that row loops vectorize.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent + mantissa, f32 place
  const uint32_t exp = em & 0x0f800000u;                         // the f16 exponent field
  const uint32_t is_inf_nan = 0u - static_cast<uint32_t>(exp == 0x0f800000u);  // all ones or 0
  const uint32_t is_small = 0u - static_cast<uint32_t>(exp == 0);
  // Normal: rebias the exponent 15 -> 127; inf / NaN (exponent 31): on to 255, payload kept.
  const uint32_t bits = em + ((127u - 15u) << 23) + (is_inf_nan & ((128u - 16u) << 23));
  // Zero / subnormal: mant * 2^-24, exactly (2^-14 + mant * 2^-24) - 2^-14, where the first term
  // is the normal f32 with the same mantissa bits. No f32 subnormal is involved.
  const float sub = detail::float_of(bits + (1u << 23)) - detail::float_of(113u << 23);
  return detail::float_of(sign | (detail::bits_of(sub) & is_small) | (bits & ~is_small));
}

// f32 -> IEEE binary16, round to nearest even. Overflow gives inf, values below half the
// smallest subnormal give +-0, NaN stays a (quiet) NaN with its top payload bits.
inline uint16_t f32_to_f16(float f) {
  uint32_t x = detail::bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((x >> 13) & 0x3ffu);
  if (x >= 0x47800000u) return sign | 0x7c00u;  // >= 2^16 (and inf): inf
  if (x >= 0x38800000u) {                       // >= 2^-14: a normal f16
    // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even;
    // a carry out of the mantissa correctly bumps the exponent (up to inf at 65520).
    const uint32_t y = x - ((127u - 15u) << 23);
    return sign | static_cast<uint16_t>((y + 0xfffu + ((y >> 13) & 1u)) >> 13);
  }
  const uint32_t e = x >> 23;  // biased f32 exponent
  if (e < 102) return sign;    // < 2^-25: rounds to zero
  // Subnormal: value = m * 2^(e-150) = (m >> (126 - e)) units of 2^-24, rounded to even.
  const uint32_t m = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14 .. 24
  const uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return sign | static_cast<uint16_t>(q + ((rem > half || (rem == half && (q & 1u))) ? 1 : 0));
}

// bfloat16 is the top half of an f32: widening is exact.
inline float bf16_to_f32(uint16_t h) { return detail::float_of(static_cast<uint32_t>(h) << 16); }

// f32 -> bfloat16, round to nearest even (subnormals included); NaN stays a quiet NaN.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = detail::bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// ---- block layouts -----------------------------------------------------------------------
//
// Byte-for-byte the GGUF / ggml structs. `d`, `m`, `dmin` are IEEE f16 bit patterns unless noted.
// Within a block, element e (0-based) of the row slice the block covers is written w[e].

inline constexpr int kQK = 32;    // elements per block of the classic types
inline constexpr int kQKK = 256;  // elements per K-quant super-block

// Q4_0 — 32 weights, 18 bytes: w[e] = d * (q[e] - 8), q in [0, 15].
// qs[i] holds q[i] in its low nibble and q[i + 16] in its high nibble (i < 16).
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// Q4_1 — 32 weights, 20 bytes: w[e] = d * q[e] + m, q in [0, 15]; nibbles as Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// Q5_0 — 32 weights, 22 bytes: w[e] = d * (q[e] - 16), q in [0, 31].
// The low 4 bits of q are nibbles as Q4_0; bit 4 of q[e] is bit e of qh (a little-endian u32).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// Q5_1 — 32 weights, 24 bytes: w[e] = d * q[e] + m, q in [0, 31]; bits as Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// Q8_0 — 32 weights, 34 bytes: w[e] = d * qs[e], qs int8.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// Q2_K — 256 weights, 84 bytes: 16 sub-blocks of 16 (sub-block s = e / 16).
//   w[e] = d * (scales[s] & 15) * q[e] - dmin * (scales[s] >> 4),  q in [0, 3]
// For e = 128 h + 32 j + l (h < 2, j < 4, l < 32): q[e] = (qs[32 h + l] >> 2 j) & 3.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint16_t d;
  uint16_t dmin;
};

// Q3_K — 256 weights, 110 bytes: 16 sub-blocks of 16, signed 6-bit scales sc[s] in [-32, 31].
//   w[e] = d * sc[s] * q[e],  q in [-4, 3]
// For e = 128 h + 32 j + l: the low 2 bits of q[e] + 4 are (qs[32 h + l] >> 2 j) & 3, the third
// bit is bit (4 h + j) of hmask[l]. sc[s] + 32 is 6 bits: the low 4 in scales[s] (s < 8) or
// scales[s - 8] >> 4 (s >= 8), the high 2 are (scales[8 + s % 4] >> 2 (s / 4)) & 3.
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;
};

// Q4_K — 256 weights, 144 bytes: 8 sub-blocks of 32 (s = e / 32), 6-bit scale sc and min mn.
//   w[e] = d * sc[s] * q[e] - dmin * mn[s],  q in [0, 15]
// For e = 64 j + 32 k + l (k < 2, l < 32): q[e] is nibble k (0 = low) of qs[32 j + l].
// scales (12 bytes), for s < 4: sc[s] = scales[s] & 63, mn[s] = scales[s + 4] & 63;
// for s >= 4: sc[s] = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4,
//             mn[s] = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};

// Q5_K — 256 weights, 176 bytes: as Q4_K with q in [0, 31]; bit 4 of q[e] is bit s of qh[l]
// (e = 64 j + 32 k + l, s = 2 j + k).
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};

// Q6_K — 256 weights, 210 bytes: 16 sub-blocks of 16, int8 scales.
//   w[e] = d * scales[s] * (q[e] - 32),  q in [0, 63],  s = e / 16
// For e = 128 h + 32 c + l (c < 4, l < 32): the low 4 bits of q[e] are nibble c / 2 of
// ql[64 h + 32 (c % 2) + l], the high 2 bits are (qh[32 h + l] >> 2 c) & 3.
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};

// Q8_K — 256 weights, 292 bytes: w[e] = d * qs[e] with an f32 d; bsums[i] = sum of qs[16 i ..
// 16 i + 15] (used by ggml's dot kernels, ignored when dequantizing).
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// ---- geometry ------------------------------------------------------------------------------

// Elements per block: 1 for f32 / f16 / bf16, 32 or 256 for the block types, 0 for dtypes this
// header does not convert (i32, i8, unknown ids).
inline int64_t block_elems(rlx_dtype t) {
  switch (t) {
    case RLX_F32:
    case RLX_F16:
    case RLX_BF16: return 1;
    case RLX_Q4_0:
    case RLX_Q4_1:
    case RLX_Q5_0:
    case RLX_Q5_1:
    case RLX_Q8_0: return kQK;
    case RLX_Q2_K:
    case RLX_Q3_K:
    case RLX_Q4_K:
    case RLX_Q5_K:
    case RLX_Q6_K:
    case RLX_Q8_K: return kQKK;
    default: return 0;
  }
}

// Bytes per block (0 for dtypes this header does not convert).
inline int64_t block_bytes(rlx_dtype t) {
  switch (t) {
    case RLX_F32: return 4;
    case RLX_F16:
    case RLX_BF16: return 2;
    case RLX_Q4_0: return sizeof(BlockQ4_0);
    case RLX_Q4_1: return sizeof(BlockQ4_1);
    case RLX_Q5_0: return sizeof(BlockQ5_0);
    case RLX_Q5_1: return sizeof(BlockQ5_1);
    case RLX_Q8_0: return sizeof(BlockQ8_0);
    case RLX_Q2_K: return sizeof(BlockQ2_K);
    case RLX_Q3_K: return sizeof(BlockQ3_K);
    case RLX_Q4_K: return sizeof(BlockQ4_K);
    case RLX_Q5_K: return sizeof(BlockQ5_K);
    case RLX_Q6_K: return sizeof(BlockQ6_K);
    case RLX_Q8_K: return sizeof(BlockQ8_K);
    default: return 0;
  }
}

inline bool is_block_quantized(rlx_dtype t) { return block_elems(t) > 1; }

// Bytes that n elements take, or -1 when n < 0, n is not a whole number of blocks, or the dtype
// is not one this header converts.
inline int64_t row_bytes(rlx_dtype t, int64_t n) {
  const int64_t be = block_elems(t);
  if (be == 0 || n < 0 || n % be != 0) return -1;
  return n / be * block_bytes(t);
}

// ---- dequantization: one block -> block_elems floats --------------------------------------
//
// The float expressions follow ggml's scalar dequantize_row_* term by term (operand order and
// types), which is what makes the results bit-identical. Each function reads the block where it
// lies (`blk`, any alignment): byte arrays through the pointer, f16 / f32 / u32 fields with
// memcpy. No copy of the block is made (copying odd-sized blocks to the stack stalls on store
// forwarding and cost 2-5x in the hot loop).

namespace detail {
inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return f16_to_f32(h);
}
inline int8_t i8(uint8_t v) { return static_cast<int8_t>(v); }  // two's complement (C++20)
}  // namespace detail

#define RLX_QUANT_FIELD(Block, field) (blk + offsetof(Block, field))

inline void dequantize_q4_0(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ4_0, d));
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ4_0, qs);
  // Two passes (low nibbles, then high) vectorize better than one interleaved loop.
  for (int i = 0; i < kQK / 2; ++i) y[i] = static_cast<float>((qs[i] & 0x0f) - 8) * d;
  for (int i = 0; i < kQK / 2; ++i) y[i + kQK / 2] = static_cast<float>((qs[i] >> 4) - 8) * d;
}

inline void dequantize_q4_1(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ4_1, d));
  const float m = detail::f16_at(RLX_QUANT_FIELD(BlockQ4_1, m));
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ4_1, qs);
  for (int i = 0; i < kQK / 2; ++i) y[i] = static_cast<float>(qs[i] & 0x0f) * d + m;
  for (int i = 0; i < kQK / 2; ++i) y[i + kQK / 2] = static_cast<float>(qs[i] >> 4) * d + m;
}

inline void dequantize_q5_0(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ5_0, d));
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ5_0, qs);
  uint32_t qh;
  std::memcpy(&qh, RLX_QUANT_FIELD(BlockQ5_0, qh), sizeof qh);
  for (int i = 0; i < kQK / 2; ++i) {
    const int h0 = static_cast<int>((qh >> i) & 1u) << 4;
    const int h1 = static_cast<int>((qh >> (i + 16)) & 1u) << 4;
    y[i] = static_cast<float>(((qs[i] & 0x0f) | h0) - 16) * d;
    y[i + kQK / 2] = static_cast<float>(((qs[i] >> 4) | h1) - 16) * d;
  }
}

inline void dequantize_q5_1(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ5_1, d));
  const float m = detail::f16_at(RLX_QUANT_FIELD(BlockQ5_1, m));
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ5_1, qs);
  uint32_t qh;
  std::memcpy(&qh, RLX_QUANT_FIELD(BlockQ5_1, qh), sizeof qh);
  for (int i = 0; i < kQK / 2; ++i) {
    const int h0 = static_cast<int>((qh >> i) & 1u) << 4;
    const int h1 = static_cast<int>((qh >> (i + 16)) & 1u) << 4;
    y[i] = static_cast<float>((qs[i] & 0x0f) | h0) * d + m;
    y[i + kQK / 2] = static_cast<float>((qs[i] >> 4) | h1) * d + m;
  }
}

inline void dequantize_q8_0(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ8_0, d));
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ8_0, qs);
  for (int i = 0; i < kQK; ++i) y[i] = static_cast<float>(detail::i8(qs[i])) * d;
}

inline void dequantize_q2_k(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ2_K, d));
  const float dmin = detail::f16_at(RLX_QUANT_FIELD(BlockQ2_K, dmin));
  const uint8_t* scales = RLX_QUANT_FIELD(BlockQ2_K, scales);
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ2_K, qs);
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j)
      for (int half = 0; half < 2; ++half) {
        const int s = 8 * h + 2 * j + half;  // sub-block of 16
        const float dl = d * static_cast<float>(scales[s] & 0x0f);
        const float ml = dmin * static_cast<float>(scales[s] >> 4);
        for (int l = 16 * half; l < 16 * half + 16; ++l)
          y[128 * h + 32 * j + l] = dl * static_cast<float>((qs[32 * h + l] >> (2 * j)) & 3) - ml;
      }
}

// The 16 signed 6-bit scales of a Q3_K block, unpacked (see BlockQ3_K).
inline void q3_k_scales(const uint8_t* packed, int sc[16]) {
  for (int s = 0; s < 16; ++s) {
    const int lo = s < 8 ? packed[s] & 0x0f : packed[s - 8] >> 4;
    const int hi = (packed[8 + s % 4] >> (2 * (s / 4))) & 3;
    sc[s] = (lo | hi << 4) - 32;
  }
}

inline void dequantize_q3_k(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ3_K, d));
  const uint8_t* hmask = RLX_QUANT_FIELD(BlockQ3_K, hmask);
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ3_K, qs);
  int sc[16];
  q3_k_scales(RLX_QUANT_FIELD(BlockQ3_K, scales), sc);
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 4; ++j) {
      const int bit = 4 * h + j;  // of hmask[l]
      for (int half = 0; half < 2; ++half) {
        const float dl = d * static_cast<float>(sc[8 * h + 2 * j + half]);
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int q = ((qs[32 * h + l] >> (2 * j)) & 3) - (((hmask[l] >> bit) & 1) ? 0 : 4);
          y[128 * h + 32 * j + l] = dl * static_cast<float>(q);
        }
      }
    }
}

// Scale and min of sub-block s (0..7) of a Q4_K / Q5_K block (see BlockQ4_K).
inline void k4_scale_min(const uint8_t* packed, int s, int& sc, int& mn) {
  if (s < 4) {
    sc = packed[s] & 63;
    mn = packed[s + 4] & 63;
  } else {
    sc = (packed[s + 4] & 0x0f) | (packed[s - 4] >> 6) << 4;
    mn = (packed[s + 4] >> 4) | (packed[s] >> 6) << 4;
  }
}

inline void dequantize_q4_k(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ4_K, d));
  const float dmin = detail::f16_at(RLX_QUANT_FIELD(BlockQ4_K, dmin));
  const uint8_t* scales = RLX_QUANT_FIELD(BlockQ4_K, scales);
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ4_K, qs);
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 2; ++k) {
      int sc, mn;
      k4_scale_min(scales, 2 * j + k, sc, mn);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l)
        y[64 * j + 32 * k + l] = dl * static_cast<float>((qs[32 * j + l] >> (4 * k)) & 0x0f) - ml;
    }
}

inline void dequantize_q5_k(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ5_K, d));
  const float dmin = detail::f16_at(RLX_QUANT_FIELD(BlockQ5_K, dmin));
  const uint8_t* scales = RLX_QUANT_FIELD(BlockQ5_K, scales);
  const uint8_t* qh = RLX_QUANT_FIELD(BlockQ5_K, qh);
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ5_K, qs);
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k < 2; ++k) {
      const int s = 2 * j + k;
      int sc, mn;
      k4_scale_min(scales, s, sc, mn);
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) {
        const int q = ((qs[32 * j + l] >> (4 * k)) & 0x0f) + (((qh[l] >> s) & 1) ? 16 : 0);
        y[64 * j + 32 * k + l] = dl * static_cast<float>(q) - ml;
      }
    }
}

inline void dequantize_q6_k(const uint8_t* blk, float* y) {
  const float d = detail::f16_at(RLX_QUANT_FIELD(BlockQ6_K, d));
  const uint8_t* ql = RLX_QUANT_FIELD(BlockQ6_K, ql);
  const uint8_t* qh = RLX_QUANT_FIELD(BlockQ6_K, qh);
  const uint8_t* scales = RLX_QUANT_FIELD(BlockQ6_K, scales);
  for (int h = 0; h < 2; ++h)
    for (int c = 0; c < 4; ++c)
      for (int half = 0; half < 2; ++half) {
        // ggml computes d * sc * q left to right, i.e. (d * sc) * q.
        const float dl = d * static_cast<float>(detail::i8(scales[8 * h + 2 * c + half]));
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int lo = (ql[64 * h + 32 * (c % 2) + l] >> (4 * (c / 2))) & 0x0f;
          const int hi = (qh[32 * h + l] >> (2 * c)) & 3;
          y[128 * h + 32 * c + l] = dl * static_cast<float>((lo | hi << 4) - 32);
        }
      }
}

inline void dequantize_q8_k(const uint8_t* blk, float* y) {
  float d;
  std::memcpy(&d, RLX_QUANT_FIELD(BlockQ8_K, d), sizeof d);
  const uint8_t* qs = RLX_QUANT_FIELD(BlockQ8_K, qs);
  for (int i = 0; i < kQKK; ++i) y[i] = d * static_cast<float>(detail::i8(qs[i]));
}

#undef RLX_QUANT_FIELD

namespace detail {
template <class Block, int kElems, void (*kDequant)(const uint8_t*, float*)>
inline void dequantize_blocks(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / kElems; ++i)
    kDequant(p + i * static_cast<int64_t>(sizeof(Block)), dst + i * kElems);
}
}  // namespace detail

// src: row_bytes(t, n) bytes at any alignment -> dst: n floats. False (and nothing written) for
// a dtype this header does not convert or an n that is not a whole number of blocks.
inline bool dequantize_row(rlx_dtype t, const void* src, float* dst, int64_t n) {
  using namespace detail;
  if (row_bytes(t, n) < 0) return false;
  const auto* p = static_cast<const uint8_t*>(src);
  uint16_t h;
  switch (t) {
    case RLX_F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return true;
    case RLX_F16:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = f16_to_f32(h);
      }
      return true;
    case RLX_BF16:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(&h, p + 2 * i, sizeof h);
        dst[i] = bf16_to_f32(h);
      }
      return true;
    case RLX_Q4_0: dequantize_blocks<BlockQ4_0, kQK, dequantize_q4_0>(src, dst, n); return true;
    case RLX_Q4_1: dequantize_blocks<BlockQ4_1, kQK, dequantize_q4_1>(src, dst, n); return true;
    case RLX_Q5_0: dequantize_blocks<BlockQ5_0, kQK, dequantize_q5_0>(src, dst, n); return true;
    case RLX_Q5_1: dequantize_blocks<BlockQ5_1, kQK, dequantize_q5_1>(src, dst, n); return true;
    case RLX_Q8_0: dequantize_blocks<BlockQ8_0, kQK, dequantize_q8_0>(src, dst, n); return true;
    case RLX_Q2_K: dequantize_blocks<BlockQ2_K, kQKK, dequantize_q2_k>(src, dst, n); return true;
    case RLX_Q3_K: dequantize_blocks<BlockQ3_K, kQKK, dequantize_q3_k>(src, dst, n); return true;
    case RLX_Q4_K: dequantize_blocks<BlockQ4_K, kQKK, dequantize_q4_k>(src, dst, n); return true;
    case RLX_Q5_K: dequantize_blocks<BlockQ5_K, kQKK, dequantize_q5_k>(src, dst, n); return true;
    case RLX_Q6_K: dequantize_blocks<BlockQ6_K, kQKK, dequantize_q6_k>(src, dst, n); return true;
    case RLX_Q8_K: dequantize_blocks<BlockQ8_K, kQKK, dequantize_q8_k>(src, dst, n); return true;
    default: return false;
  }
}

// ---- quantization: block_elems floats -> one block -----------------------------------------
//
// Reference quality, deterministic, ggml *_ref-like: one scale (and min) per block or sub-block
// from the block's range, the sub-block scales quantized against the super-block's, and every
// value then rounded with the scale it will actually be read back with (after f16 rounding).
// An all-zero input gives an all-zero block; NaN inputs give finite garbage, never UB.

namespace detail {

// Round to nearest (ties to even) and clamp to [lo, hi]; NaN maps to lo.
inline int nearest(float v, int lo, int hi) {
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::nearbyint(v));
}

// The value of largest magnitude, with its sign (the first one on ties).
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  return max;
}

inline float min_of(const float* x, int n) { return *std::min_element(x, x + n); }
inline float max_of(const float* x, int n) { return *std::max_element(x, x + n); }

// Symmetric fit: x ~ d * q with q in [-nmax, nmax - 1] and the largest magnitude mapped onto
// -nmax (the side with one more level). Returns d rounded through f16.
inline float symmetric_f16_scale(const float* x, int n, int nmax) {
  return f16_to_f32(f32_to_f16(signed_absmax(x, n) / static_cast<float>(-nmax)));
}

inline float inverse(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Affine fit of one sub-block for the K-quants: x ~ scale * q - mn with q in [0, qmax] and
// mn = -min(0, min x) >= 0 (so 0 stays on the grid, as in ggml).
inline void affine_fit(const float* x, int n, int qmax, float& scale, float& mn) {
  const float lo = std::min(0.0f, min_of(x, n)), hi = max_of(x, n);
  scale = hi > lo ? (hi - lo) / static_cast<float>(qmax) : 0.0f;
  mn = -lo;
}

}  // namespace detail

inline void quantize_block(const float* x, BlockQ4_0& b) {
  const float d = detail::symmetric_f16_scale(x, kQK, 8), id = detail::inverse(d);
  b.d = f32_to_f16(d);
  for (int i = 0; i < kQK / 2; ++i) {
    const int q0 = detail::nearest(x[i] * id + 8.0f, 0, 15);
    const int q1 = detail::nearest(x[i + kQK / 2] * id + 8.0f, 0, 15);
    b.qs[i] = static_cast<uint8_t>(q0 | q1 << 4);
  }
}

inline void quantize_block(const float* x, BlockQ5_0& b) {
  const float d = detail::symmetric_f16_scale(x, kQK, 16), id = detail::inverse(d);
  b.d = f32_to_f16(d);
  uint32_t qh = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    const int q0 = detail::nearest(x[i] * id + 16.0f, 0, 31);
    const int q1 = detail::nearest(x[i + kQK / 2] * id + 16.0f, 0, 31);
    b.qs[i] = static_cast<uint8_t>((q0 & 0x0f) | (q1 & 0x0f) << 4);
    qh |= static_cast<uint32_t>(q0 >> 4) << i | static_cast<uint32_t>(q1 >> 4) << (i + 16);
  }
  std::memcpy(b.qh, &qh, sizeof qh);
}

namespace detail {
// Q4_1 / Q5_1: x ~ d * q + m over the block's full range, q in [0, qmax].
template <class Block>
inline void quantize_affine_32(const float* x, Block& b, int qmax, uint32_t* qh) {
  const float lo = min_of(x, kQK), hi = max_of(x, kQK);
  b.d = f32_to_f16((hi - lo) / static_cast<float>(qmax));
  b.m = f32_to_f16(lo);
  const float d = f16_to_f32(b.d), m = f16_to_f32(b.m), id = inverse(d);
  if (qh) *qh = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    const int q0 = nearest((x[i] - m) * id, 0, qmax);
    const int q1 = nearest((x[i + kQK / 2] - m) * id, 0, qmax);
    b.qs[i] = static_cast<uint8_t>((q0 & 0x0f) | (q1 & 0x0f) << 4);
    if (qh) *qh |= static_cast<uint32_t>(q0 >> 4) << i | static_cast<uint32_t>(q1 >> 4) << (i + 16);
  }
}
}  // namespace detail

inline void quantize_block(const float* x, BlockQ4_1& b) {
  detail::quantize_affine_32(x, b, 15, nullptr);
}

inline void quantize_block(const float* x, BlockQ5_1& b) {
  uint32_t qh;
  detail::quantize_affine_32(x, b, 31, &qh);
  std::memcpy(b.qh, &qh, sizeof qh);
}

inline void quantize_block(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
  b.d = f32_to_f16(amax / 127.0f);
  const float id = detail::inverse(f16_to_f32(b.d));
  for (int i = 0; i < kQK; ++i)
    b.qs[i] = static_cast<int8_t>(detail::nearest(x[i] * id, -128, 127));
}

namespace detail {

// The K-quants with mins (Q2_K, Q4_K, Q5_K): per sub-block an affine fit, then the scales and
// mins quantized to `sbits`-bit integers against super-block f16 factors d and dmin, then every
// value rounded with the scale and min it will be read back with. q[e] in [0, qmax] out.
template <int kSub>
inline void quantize_k_affine(const float* x, int qmax, int smax, uint16_t& d16, uint16_t& dmin16,
                              int* sc, int* mn, uint8_t* q) {
  constexpr int kN = kQKK / kSub;
  float scale[kN], min[kN], max_scale = 0.0f, max_min = 0.0f;
  for (int s = 0; s < kN; ++s) {
    affine_fit(x + s * kSub, kSub, qmax, scale[s], min[s]);
    max_scale = std::max(max_scale, scale[s]);
    max_min = std::max(max_min, min[s]);
  }
  d16 = f32_to_f16(max_scale / static_cast<float>(smax));
  dmin16 = f32_to_f16(max_min / static_cast<float>(smax));
  const float d = f16_to_f32(d16), dmin = f16_to_f32(dmin16);
  const float id = inverse(d), idmin = inverse(dmin);
  for (int s = 0; s < kN; ++s) {
    sc[s] = nearest(scale[s] * id, 0, smax);
    mn[s] = nearest(min[s] * idmin, 0, smax);
    const float dl = d * static_cast<float>(sc[s]), ml = dmin * static_cast<float>(mn[s]);
    const float idl = inverse(dl);
    for (int i = s * kSub; i < (s + 1) * kSub; ++i)
      q[i] = static_cast<uint8_t>(nearest((x[i] + ml) * idl, 0, qmax));
  }
}

// The symmetric K-quants (Q3_K, Q6_K): per sub-block of 16 a scale with q in [-nmax, nmax - 1],
// the scales quantized to integers in [-smax, smax - 1] against one f16 d. q[e] + nmax out.
inline void quantize_k_symmetric(const float* x, int nmax, int smax, uint16_t& d16, int* sc,
                                 uint8_t* q) {
  float scale[16];
  for (int s = 0; s < 16; ++s) scale[s] = signed_absmax(x + 16 * s, 16) / static_cast<float>(-nmax);
  const float max_scale = signed_absmax(scale, 16);
  d16 = f32_to_f16(max_scale / static_cast<float>(-smax));
  const float d = f16_to_f32(d16), id = inverse(d);
  for (int s = 0; s < 16; ++s) {
    sc[s] = nearest(scale[s] * id, -smax, smax - 1);
    const float idl = inverse(d * static_cast<float>(sc[s]));
    for (int i = 16 * s; i < 16 * s + 16; ++i)
      q[i] = static_cast<uint8_t>(nearest(x[i] * idl, -nmax, nmax - 1) + nmax);
  }
}

// Packs 8 six-bit scales and mins into the 12 bytes of Q4_K / Q5_K (inverse of k4_scale_min).
inline void pack_k4_scales(const int* sc, const int* mn, uint8_t packed[12]) {
  for (int s = 0; s < 4; ++s) {
    packed[s] = static_cast<uint8_t>(sc[s] | (sc[s + 4] >> 4) << 6);
    packed[s + 4] = static_cast<uint8_t>(mn[s] | (mn[s + 4] >> 4) << 6);
    packed[s + 8] = static_cast<uint8_t>((sc[s + 4] & 0x0f) | (mn[s + 4] & 0x0f) << 4);
  }
}

}  // namespace detail

inline void quantize_block(const float* x, BlockQ2_K& b) {
  int sc[16], mn[16];
  uint8_t q[kQKK];
  detail::quantize_k_affine<16>(x, 3, 15, b.d, b.dmin, sc, mn, q);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(sc[s] | mn[s] << 4);
  std::memset(b.qs, 0, sizeof b.qs);
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    b.qs[32 * h + l] |= static_cast<uint8_t>(q[e] << (2 * j));
  }
}

inline void quantize_block(const float* x, BlockQ3_K& b) {
  int sc[16];
  uint8_t q[kQKK];  // q + 4, in [0, 7]
  detail::quantize_k_symmetric(x, 4, 32, b.d, sc, q);
  std::memset(b.scales, 0, sizeof b.scales);
  for (int s = 0; s < 16; ++s) {
    const int u = sc[s] + 32;  // 6 bits
    b.scales[s % 8] |= static_cast<uint8_t>((u & 0x0f) << (s < 8 ? 0 : 4));
    b.scales[8 + s % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (s / 4)));
  }
  std::memset(b.qs, 0, sizeof b.qs);
  std::memset(b.hmask, 0, sizeof b.hmask);
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    b.qs[32 * h + l] |= static_cast<uint8_t>((q[e] & 3) << (2 * j));
    if (q[e] & 4) b.hmask[l] |= static_cast<uint8_t>(1u << (4 * h + j));
  }
}

inline void quantize_block(const float* x, BlockQ4_K& b) {
  int sc[8], mn[8];
  uint8_t q[kQKK];
  detail::quantize_k_affine<32>(x, 15, 63, b.d, b.dmin, sc, mn, q);
  detail::pack_k4_scales(sc, mn, b.scales);
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * j + l] = static_cast<uint8_t>(q[64 * j + l] | q[64 * j + 32 + l] << 4);
}

inline void quantize_block(const float* x, BlockQ5_K& b) {
  int sc[8], mn[8];
  uint8_t q[kQKK];
  detail::quantize_k_affine<32>(x, 31, 63, b.d, b.dmin, sc, mn, q);
  detail::pack_k4_scales(sc, mn, b.scales);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      const int q0 = q[64 * j + l], q1 = q[64 * j + 32 + l];
      b.qs[32 * j + l] = static_cast<uint8_t>((q0 & 0x0f) | (q1 & 0x0f) << 4);
      b.qh[l] |= static_cast<uint8_t>((q0 >> 4) << (2 * j) | (q1 >> 4) << (2 * j + 1));
    }
}

inline void quantize_block(const float* x, BlockQ6_K& b) {
  int sc[16];
  uint8_t q[kQKK];  // q in [0, 63]
  detail::quantize_k_symmetric(x, 32, 128, b.d, sc, q);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(sc[s]);
  std::memset(b.ql, 0, sizeof b.ql);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, c = (e % 128) / 32, l = e % 32;
    b.ql[64 * h + 32 * (c % 2) + l] |= static_cast<uint8_t>((q[e] & 0x0f) << (4 * (c / 2)));
    b.qh[32 * h + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * c));
  }
}

inline void quantize_block(const float* x, BlockQ8_K& b) {
  float amax = 0.0f;
  for (int i = 0; i < kQKK; ++i) amax = std::max(amax, std::fabs(x[i]));
  b.d = amax / 127.0f;
  const float id = detail::inverse(b.d);
  for (int i = 0; i < kQKK; ++i)
    b.qs[i] = static_cast<int8_t>(detail::nearest(x[i] * id, -127, 127));
  for (int g = 0; g < kQKK / 16; ++g) {
    int sum = 0;
    for (int i = 16 * g; i < 16 * g + 16; ++i) sum += b.qs[i];
    b.bsums[g] = static_cast<int16_t>(sum);
  }
}

namespace detail {
template <class Block, int kElems>
inline void quantize_blocks(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kElems; ++i) {
    Block b;
    quantize_block(src + i * kElems, b);
    std::memcpy(p + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
  }
}
}  // namespace detail

// src: n floats -> dst: row_bytes(t, n) bytes. False (and nothing written) for a dtype this
// header does not convert or an n that is not a whole number of blocks.
inline bool quantize_row(rlx_dtype t, const float* src, void* dst, int64_t n) {
  if (row_bytes(t, n) < 0) return false;
  auto* p = static_cast<uint8_t*>(dst);
  switch (t) {
    case RLX_F32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return true;
    case RLX_F16:
    case RLX_BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = t == RLX_F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(p + 2 * i, &h, sizeof h);
      }
      return true;
    case RLX_Q4_0: detail::quantize_blocks<BlockQ4_0, kQK>(src, dst, n); return true;
    case RLX_Q4_1: detail::quantize_blocks<BlockQ4_1, kQK>(src, dst, n); return true;
    case RLX_Q5_0: detail::quantize_blocks<BlockQ5_0, kQK>(src, dst, n); return true;
    case RLX_Q5_1: detail::quantize_blocks<BlockQ5_1, kQK>(src, dst, n); return true;
    case RLX_Q8_0: detail::quantize_blocks<BlockQ8_0, kQK>(src, dst, n); return true;
    case RLX_Q2_K: detail::quantize_blocks<BlockQ2_K, kQKK>(src, dst, n); return true;
    case RLX_Q3_K: detail::quantize_blocks<BlockQ3_K, kQKK>(src, dst, n); return true;
    case RLX_Q4_K: detail::quantize_blocks<BlockQ4_K, kQKK>(src, dst, n); return true;
    case RLX_Q5_K: detail::quantize_blocks<BlockQ5_K, kQKK>(src, dst, n); return true;
    case RLX_Q6_K: detail::quantize_blocks<BlockQ6_K, kQKK>(src, dst, n); return true;
    case RLX_Q8_K: detail::quantize_blocks<BlockQ8_K, kQKK>(src, dst, n); return true;
    default: return false;
  }
}

}  // namespace rlx::quant
