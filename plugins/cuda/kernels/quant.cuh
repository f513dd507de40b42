// Device-side weight formats for the cuda backend's kernels (matmul.cu, embed.cu): dequantizers
// for f32 / f16 / bf16 and the GGUF block types (all of rlx/quant.h's except q8_k), and the int8
// activation blocks of the dp4a GEMV.
//
// Dequantizers are bit-identical with rlx::quant's host ones: the same float operations in the
// same order (every "a * q + b" has an exact product, so FMA contraction changes nothing).
//
//   W<DT>::kBlock, kBytes        elements and bytes per block (1 and the element size: floats)
//   W<DT>::deq8(row, e0, y)      y[0..8) = elements e0 .. e0 + 7 of the row whose bytes start at
//                                `row`; e0 a multiple of 8 (block types: the row is whole blocks)
//   W<DT>::at(row, e)            one element (float types only)
//
// Block types are read byte by byte here (blocks of 18, 22, 34, 110, 210 bytes leave fields at
// any even offset and rows at any even address), so any 2-aligned row works; the wide loads of
// the int8 GEMV live in matmul.cu.
//
// Int8 activations (the x side of the dp4a GEMV; the math of the cpu backend's qdot): each row
// of x, in blocks of 32, as int8 q[e] = nearest(x[e] / d) with d = amax / 127 (ties to even),
// plus per block the float pair (d, d * sum(q)). Layout in the scratch buffer (see matmul.cu):
// q as int8 [m, k] (so 4-byte loads are aligned), then float2 [m, k / 32].
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../gpu.h"
#include "rlx/plugin_abi.h"

// Loop unrolling hints for nvcc / hipcc (g++ would warn about the pragma).
#if defined(RLX_GPU_EMU)
#define RLX_UNROLL
#define RLX_UNROLL8
#else
#define RLX_UNROLL _Pragma("unroll")
#define RLX_UNROLL8 _Pragma("unroll 8")
#endif

namespace rlx::gpu::q {

// ---- loads ---------------------------------------------------------------------------------

RLX_DEV uint32_t ld8(const uint8_t* p) { return p[0]; }
// Little-endian 16 bits from two bytes (any alignment).
RLX_DEV uint32_t ldb16(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8; }
// An f16 field at any alignment.
RLX_DEV float f16b(const uint8_t* p) { return half_to_float(static_cast<uint16_t>(ldb16(p))); }

// 16 / 32-bit loads at 2 / 4-aligned addresses (the emulator: memcpy, no aliasing questions).
RLX_DEV uint32_t ld16(const uint8_t* p) {
#if defined(RLX_GPU_EMU)
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
#else
  return *reinterpret_cast<const uint16_t*>(p);
#endif
}
RLX_DEV uint32_t ld32(const void* p) {
#if defined(RLX_GPU_EMU)
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
#else
  return *reinterpret_cast<const uint32_t*>(p);
#endif
}
// 32 bits at a 2-aligned address.
RLX_DEV uint32_t ld32_a2(const uint8_t* p) { return ld16(p) | ld16(p + 2) << 16; }
RLX_DEV float ldf32(const uint8_t* p) {
#if defined(RLX_GPU_EMU)
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
#else
  return *reinterpret_cast<const float*>(p);
#endif
}

// ---- dequantizers ----------------------------------------------------------------------------

template <uint32_t DT>
struct W;

template <>
struct W<RLX_F32> {
  static constexpr int kBlock = 1, kBytes = 4;
  RLX_DEV static float at(const uint8_t* row, int e) { return ldf32(row + 4 * e); }
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    for (int i = 0; i < 8; ++i) y[i] = at(row, e0 + i);
  }
};

template <>
struct W<RLX_F16> {
  static constexpr int kBlock = 1, kBytes = 2;
  RLX_DEV static float at(const uint8_t* row, int e) {
    return half_to_float(static_cast<uint16_t>(ld16(row + 2 * e)));
  }
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    for (int i = 0; i < 8; ++i) y[i] = at(row, e0 + i);
  }
};

template <>
struct W<RLX_BF16> {
  static constexpr int kBlock = 1, kBytes = 2;
  RLX_DEV static float at(const uint8_t* row, int e) {
    return bf16_to_float(static_cast<uint16_t>(ld16(row + 2 * e)));
  }
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    for (int i = 0; i < 8; ++i) y[i] = at(row, e0 + i);
  }
};

// Q4_0: w = d * (q - 8); qs[i] low nibble element i, high nibble element i + 16.
template <>
struct W<RLX_Q4_0> {
  static constexpr int kBlock = 32, kBytes = 18;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, sh = e >= 16 ? 4 : 0, i0 = e & 15;
    const float d = f16b(b);
    for (int i = 0; i < 8; ++i) {
      const int q = (b[2 + i0 + i] >> sh) & 0x0f;
      y[i] = static_cast<float>(q - 8) * d;
    }
  }
};

// Q4_1: w = d * q + m.
template <>
struct W<RLX_Q4_1> {
  static constexpr int kBlock = 32, kBytes = 20;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, sh = e >= 16 ? 4 : 0, i0 = e & 15;
    const float d = f16b(b), m = f16b(b + 2);
    for (int i = 0; i < 8; ++i) {
      const int q = (b[4 + i0 + i] >> sh) & 0x0f;
      y[i] = static_cast<float>(q) * d + m;
    }
  }
};

// Q5_0: w = d * (q - 16); bit 4 of q[e] is bit e of qh.
template <>
struct W<RLX_Q5_0> {
  static constexpr int kBlock = 32, kBytes = 22;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, sh = e >= 16 ? 4 : 0, i0 = e & 15;
    const float d = f16b(b);
    const uint32_t qh = ldb16(b + 2) | ldb16(b + 4) << 16;
    for (int i = 0; i < 8; ++i) {
      const int q = ((b[6 + i0 + i] >> sh) & 0x0f) | static_cast<int>((qh >> (e + i)) & 1u) << 4;
      y[i] = static_cast<float>(q - 16) * d;
    }
  }
};

// Q5_1: w = d * q + m; bits as Q5_0.
template <>
struct W<RLX_Q5_1> {
  static constexpr int kBlock = 32, kBytes = 24;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, sh = e >= 16 ? 4 : 0, i0 = e & 15;
    const float d = f16b(b), m = f16b(b + 2);
    const uint32_t qh = ldb16(b + 4) | ldb16(b + 6) << 16;
    for (int i = 0; i < 8; ++i) {
      const int q = ((b[8 + i0 + i] >> sh) & 0x0f) | static_cast<int>((qh >> (e + i)) & 1u) << 4;
      y[i] = static_cast<float>(q) * d + m;
    }
  }
};

// Q8_0: w = d * qs.
template <>
struct W<RLX_Q8_0> {
  static constexpr int kBlock = 32, kBytes = 34;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock;
    const float d = f16b(b);
    for (int i = 0; i < 8; ++i) y[i] = static_cast<float>(static_cast<int8_t>(b[2 + e + i])) * d;
  }
};

// Q2_K: scales[16] qs[64] d dmin; e = 128 h + 32 j + l, q = (qs[32 h + l] >> 2 j) & 3,
// w = (d * (sc & 15)) * q - dmin * (sc >> 4), sub-block s = e / 16.
template <>
struct W<RLX_Q2_K> {
  static constexpr int kBlock = 256, kBytes = 84;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, h = e >> 7, j = (e >> 5) & 3, l0 = e & 31, s = e >> 4;
    const float d = f16b(b + 80), dmin = f16b(b + 82);
    const int sc = b[s];
    const float dl = d * static_cast<float>(sc & 0x0f);
    const float ml = dmin * static_cast<float>(sc >> 4);
    const uint8_t* qs = b + 16 + 32 * h + l0;
    for (int i = 0; i < 8; ++i) y[i] = dl * static_cast<float>((qs[i] >> (2 * j)) & 3) - ml;
  }
};

// Q3_K: hmask[32] qs[64] scales[12] d; signed 6-bit scales, q in [-4, 3].
RLX_DEV int q3k_scale(const uint8_t* sc, int s) {
  const int lo = s < 8 ? sc[s] & 0x0f : sc[s - 8] >> 4;
  const int hi = (sc[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
  return (lo | hi << 4) - 32;
}
template <>
struct W<RLX_Q3_K> {
  static constexpr int kBlock = 256, kBytes = 110;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, h = e >> 7, j = (e >> 5) & 3, l0 = e & 31, s = e >> 4;
    const float d = f16b(b + 108);
    const float dl = d * static_cast<float>(q3k_scale(b + 96, s));
    const uint8_t* qs = b + 32 + 32 * h + l0;
    const uint8_t* hm = b + l0;
    const int bit = 4 * h + j;
    for (int i = 0; i < 8; ++i) {
      const int q = ((qs[i] >> (2 * j)) & 3) - (((hm[i] >> bit) & 1) ? 0 : 4);
      y[i] = dl * static_cast<float>(q);
    }
  }
};

// Scale and min of sub-block s (0..7) of a Q4_K / Q5_K block.
RLX_DEV void k4_scale_min(const uint8_t* p, int s, int& sc, int& mn) {
  if (s < 4) {
    sc = p[s] & 63;
    mn = p[s + 4] & 63;
  } else {
    sc = (p[s + 4] & 0x0f) | (p[s - 4] >> 6) << 4;
    mn = (p[s + 4] >> 4) | (p[s] >> 6) << 4;
  }
}

// Q4_K: d dmin scales[12] qs[128]; e = 64 j + 32 k + l: nibble k of qs[32 j + l].
template <>
struct W<RLX_Q4_K> {
  static constexpr int kBlock = 256, kBytes = 144;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, j = e >> 6, k = (e >> 5) & 1, l0 = e & 31, s = e >> 5;
    const float d = f16b(b), dmin = f16b(b + 2);
    int sc, mn;
    k4_scale_min(b + 4, s, sc, mn);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
    const uint8_t* qs = b + 16 + 32 * j + l0;
    for (int i = 0; i < 8; ++i) y[i] = dl * static_cast<float>((qs[i] >> (4 * k)) & 0x0f) - ml;
  }
};

// Q5_K: d dmin scales[12] qh[32] qs[128]; as Q4_K plus bit s of qh[l] as bit 4.
template <>
struct W<RLX_Q5_K> {
  static constexpr int kBlock = 256, kBytes = 176;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, j = e >> 6, k = (e >> 5) & 1, l0 = e & 31, s = e >> 5;
    const float d = f16b(b), dmin = f16b(b + 2);
    int sc, mn;
    k4_scale_min(b + 4, s, sc, mn);
    const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(mn);
    const uint8_t* qh = b + 16 + l0;
    const uint8_t* qs = b + 48 + 32 * j + l0;
    for (int i = 0; i < 8; ++i) {
      const int q = ((qs[i] >> (4 * k)) & 0x0f) + (((qh[i] >> s) & 1) ? 16 : 0);
      y[i] = dl * static_cast<float>(q) - ml;
    }
  }
};

// Q6_K: ql[128] qh[64] scales[16] d; e = 128 h + 32 c + l: low 4 bits nibble c / 2 of
// ql[64 h + 32 (c % 2) + l], high 2 bits (qh[32 h + l] >> 2 c) & 3; w = (d * sc) * (q - 32).
template <>
struct W<RLX_Q6_K> {
  static constexpr int kBlock = 256, kBytes = 210;
  RLX_DEV static void deq8(const uint8_t* row, int e0, float* y) {
    const uint8_t* b = row + (e0 / kBlock) * kBytes;
    const int e = e0 % kBlock, h = e >> 7, c = (e >> 5) & 3, l0 = e & 31, s = e >> 4;
    const float d = f16b(b + 208);
    const float dl = d * static_cast<float>(static_cast<int8_t>(b[192 + s]));
    const uint8_t* ql = b + 64 * h + 32 * (c & 1) + l0;
    const uint8_t* qh = b + 128 + 32 * h + l0;
    for (int i = 0; i < 8; ++i) {
      const int lo = (ql[i] >> (4 * (c >> 1))) & 0x0f, hi = (qh[i] >> (2 * c)) & 3;
      y[i] = dl * static_cast<float>((lo | hi << 4) - 32);
    }
  }
};

// ---- int8 activations ------------------------------------------------------------------------

// One block of 32 activations spread over 32 consecutive lanes (lane & 31 = element; a 64-wide
// wavefront holds two blocks): every lane of the warp calls this. Out: this lane's q, and the
// block's d and d * sum(q) (the same on all 32 lanes). The cpu qdot's math: d = amax / 127,
// q = nearest(x / d) computed as x * (1 / d), ties to even.
RLX_DEV void quantize_act32(float x, int& q, float& d, float& s) {
  float amax = fabsf(x);
  for (int m = 16; m > 0; m >>= 1) amax = fmaxf(amax, warp_xor(amax, m));
  d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  q = static_cast<int>(rintf(x * id));
  int sum = q;
  for (int m = 16; m > 0; m >>= 1) sum += warp_xor(sum, m);
  s = d * static_cast<float>(sum);
}

// Bytes per byte-lane: 0..63 -> the same minus `off` as signed int8 (no borrow between bytes).
RLX_DEV uint32_t sub_bytes(uint32_t v, uint32_t off4) {
  return ((v | 0x80808080u) - off4) ^ 0x80808080u;
}

}  // namespace rlx::gpu::q
