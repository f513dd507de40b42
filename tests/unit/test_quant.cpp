// rlx/quant.h: f16 / bf16 conversion, and every GGUF block type.
//
// The dequantizer tests build blocks byte by byte from the layout (written out in the tests by
// element index, not with the header's loops) with small power-of-two scales, so every expected
// value is exact and computed here from the format definition; they are compared bit for bit.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "rlx/dtype.h"
#include "rlx/quant.h"

using namespace rlx::quant;

namespace {

// f16 bit patterns of the scales the hand-built blocks use.
constexpr uint16_t kF16Half = 0x3800;        // 0.5
constexpr uint16_t kF16Quarter = 0x3400;     // 0.25
constexpr uint16_t kF16Eighth = 0x3000;      // 0.125
constexpr uint16_t kF16MinusOne = 0xbc00;    // -1.0
constexpr uint16_t kF16Two = 0x4000;         // 2.0
constexpr uint16_t kF16MinusQuart = 0xb400;  // -0.25

template <class Block>
std::vector<float> dequant(rlx_dtype t, const Block& b) {
  std::vector<float> out(static_cast<size_t>(block_elems(t)), -12345.0f);
  REQUIRE(dequantize_row(t, &b, out.data(), block_elems(t)));
  return out;
}

void check_exact(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t e = 0; e < got.size(); ++e) {
    INFO("element " << e);
    CHECK(static_cast<double>(got[e]) == want[e]);
  }
}

double nmse(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - double(y[i])) * (double(x[i]) - double(y[i]));
    den += double(x[i]) * double(x[i]);
  }
  return den > 0 ? num / den : num;
}

uint16_t f16_bits_of(double v) {  // only for values exactly representable (tests)
  return f32_to_f16(static_cast<float>(v));
}

}  // namespace

// ---- f16 / bf16 --------------------------------------------------------------------------------

TEST_CASE("f16 -> f32 is exact for every bit pattern", "[quant]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const int sign = (h >> 15) ? -1 : 1;
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    const float got = f16_to_f32(static_cast<uint16_t>(h));
    INFO("h = " << h);
    if (exp == 0x1f) {
      if (mant == 0)
        CHECK(got == sign * std::numeric_limits<float>::infinity());
      else
        CHECK(std::isnan(got));
      continue;
    }
    // value = (-1)^s * (exp ? 1024 + mant : mant) * 2^(max(exp, 1) - 25)
    const double want = sign * std::ldexp(exp ? 1024 + mant : mant, std::max(exp, 1) - 25);
    CHECK(static_cast<double>(got) == want);
    CHECK(std::signbit(got) == (sign < 0));
    CHECK(f32_to_f16(got) == h);  // and back
  }
}

TEST_CASE("f32 -> f16 rounds to nearest even, with subnormals, inf and NaN", "[quant]") {
  CHECK(f32_to_f16(0.0f) == 0x0000);
  CHECK(f32_to_f16(-0.0f) == 0x8000);
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(-2.0f) == 0xc000);
  CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);      // tie: even (down)
  CHECK(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);  // tie: even (up)
  CHECK(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);  // largest finite
  CHECK(f32_to_f16(65519.99f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // rounds to inf
  CHECK(f32_to_f16(1e10f) == 0x7c00);
  CHECK(f32_to_f16(-std::numeric_limits<float>::infinity()) == 0xfc00);
  CHECK(f32_to_f16(0x1p-14f) == 0x0400);             // smallest normal
  CHECK(f32_to_f16(0x1p-14f - 0x1p-24f) == 0x03ff);  // largest subnormal
  CHECK(f32_to_f16(0x1p-24f) == 0x0001);             // smallest subnormal
  CHECK(f32_to_f16(0x1p-25f) == 0x0000);             // tie between 0 and 1 unit: even
  CHECK(f32_to_f16(0x1p-25f * 1.0001f) == 0x0001);
  CHECK(f32_to_f16(3 * 0x1p-25f) == 0x0002);  // tie between 1 and 2 units: even
  CHECK(f32_to_f16(5 * 0x1p-25f) == 0x0002);  // tie between 2 and 3 units: even
  CHECK(f32_to_f16(-0x1p-26f) == 0x8000);
  CHECK(f32_to_f16(1e-30f) == 0x0000);
  const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan & 0x7c00) == 0x7c00);
  CHECK((nan & 0x03ff) != 0);
  CHECK(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::signaling_NaN()))));

#if defined(__FLT16_MAX__)
  // Against the compiler's own correctly rounded conversion, on random bit patterns.
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    INFO("f = " << f);
    REQUIRE(f32_to_f16(f) == want);
  }
#endif
}

TEST_CASE("bf16 conversions round to nearest even and keep NaN", "[quant]") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc040) == -3.0f);
  CHECK(bf16_to_f32(0x0001) == 0x1p-133f);  // smallest subnormal
  CHECK(bf16_to_f32(0x7f80) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(bf16_to_f32(0x7fc0)));
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);      // tie: even (down)
  CHECK(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);  // tie: even (up)
  CHECK(f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
  CHECK(f32_to_bf16(-0.0f) == 0x8000);
  CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // overflows to inf
  CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
  CHECK(f32_to_bf16(0x1p-133f) == 0x0001);  // subnormals are not flushed
  CHECK(f32_to_bf16(0x1p-134f) == 0x0000);  // tie: even
  CHECK(f32_to_bf16(0x1p-134f + 0x1p-140f) == 0x0001);
  const uint16_t nan = f32_to_bf16(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(bf16_to_f32(nan)));
  // A NaN whose payload lives only in the low 16 bits must not become inf.
  uint32_t low_nan = 0x7f800001;
  float f;
  std::memcpy(&f, &low_nan, 4);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(f))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float v = bf16_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(v)) REQUIRE(f32_to_bf16(v) == h);
  }
}

TEST_CASE("plain float rows dequantize and quantize", "[quant]") {
  const uint16_t f16[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};
  float out[4];
  REQUIRE(dequantize_row(RLX_F16, f16, out, 4));
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.0f);
  CHECK(out[2] == 0x1p-24f);
  CHECK(out[3] == 65504.0f);
  const uint16_t bf16[2] = {0x3f80, 0x4120};
  REQUIRE(dequantize_row(RLX_BF16, bf16, out, 2));
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == 10.0f);
  uint16_t back[4];
  REQUIRE(quantize_row(RLX_F16, out, back, 2));
  CHECK(back[0] == 0x3c00);
  CHECK(back[1] == 0x4900);  // 10.0 in f16
  const float f32[3] = {1.5f, -0.0f, 3.25f};
  REQUIRE(dequantize_row(RLX_F32, f32, out, 3));
  CHECK(std::memcmp(out, f32, sizeof f32) == 0);
}

// ---- geometry and argument checks --------------------------------------------------------------

TEST_CASE("block geometry matches GGUF and bad arguments are refused", "[quant]") {
  struct G {
    rlx_dtype t;
    int64_t elems, bytes;
  };
  for (G g : {G{RLX_F32, 1, 4}, G{RLX_F16, 1, 2}, G{RLX_BF16, 1, 2}, G{RLX_Q4_0, 32, 18},
              G{RLX_Q4_1, 32, 20}, G{RLX_Q5_0, 32, 22}, G{RLX_Q5_1, 32, 24}, G{RLX_Q8_0, 32, 34},
              G{RLX_Q2_K, 256, 84}, G{RLX_Q3_K, 256, 110}, G{RLX_Q4_K, 256, 144},
              G{RLX_Q5_K, 256, 176}, G{RLX_Q6_K, 256, 210}, G{RLX_Q8_K, 256, 292}}) {
    CHECK(block_elems(g.t) == g.elems);
    CHECK(block_bytes(g.t) == g.bytes);
    CHECK(row_bytes(g.t, 4 * g.elems) == 4 * g.bytes);
  }
  // The core's dtype table (rlx/dtype.h) must agree with the layouts here.
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = static_cast<rlx_dtype>(id);
    if (!rlx::dtype_is_known(id) || block_elems(t) == 0) continue;
    INFO("dtype " << id);
    CHECK(rlx::dtype_block_elems(t) == block_elems(t));
    CHECK(rlx::dtype_block_bytes(t) == block_bytes(t));
  }
  CHECK(row_bytes(RLX_Q4_0, 33) == -1);
  CHECK(row_bytes(RLX_I32, 4) == -1);
  CHECK(row_bytes(RLX_Q4_K, -256) == -1);
  float x[64] = {};
  uint8_t buf[64] = {};
  CHECK_FALSE(dequantize_row(RLX_Q4_0, buf, x, 31));
  CHECK_FALSE(dequantize_row(RLX_I32, buf, x, 4));
  CHECK_FALSE(dequantize_row(RLX_I8, buf, x, 4));
  CHECK_FALSE(dequantize_row(static_cast<rlx_dtype>(99), buf, x, 4));
  CHECK_FALSE(quantize_row(RLX_Q6_K, x, buf, 64));
  CHECK_FALSE(quantize_row(RLX_I32, x, buf, 4));
  CHECK(dequantize_row(RLX_Q4_0, buf, x, 0));  // an empty row is fine
}

// ---- hand-built blocks: 32-element types -------------------------------------------------------

TEST_CASE("q4_0: low nibbles are elements 0-15, high nibbles 16-31, w = d (q - 8)", "[quant]") {
  BlockQ4_0 b;
  b.d = kF16Half;
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(i | (15 - i) << 4);
  std::vector<double> want(32);
  for (int i = 0; i < 16; ++i) {
    want[i] = 0.5 * (i - 8);
    want[i + 16] = 0.5 * (15 - i - 8);
  }
  check_exact(dequant(RLX_Q4_0, b), want);
  // A literal block: qs[0] = 0x1f -> w[0] = (15 - 8) * 0.5 = 3.5, w[16] = (1 - 8) * 0.5 = -3.5.
  const uint8_t raw[18] = {0x00, 0x38, 0x1f, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
                           0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  float y[32];
  REQUIRE(dequantize_row(RLX_Q4_0, raw, y, 32));
  CHECK(y[0] == 3.5f);
  CHECK(y[16] == -3.5f);
  CHECK(y[1] == 0.0f);
  CHECK(y[31] == 0.0f);
}

TEST_CASE("q4_1: w = d q + m", "[quant]") {
  BlockQ4_1 b;
  b.d = kF16Quarter;
  b.m = kF16MinusOne;
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>((3 * i) % 16 | (i ^ 5) << 4);
  std::vector<double> want(32);
  for (int i = 0; i < 16; ++i) {
    want[i] = 0.25 * ((3 * i) % 16) - 1.0;
    want[i + 16] = 0.25 * (i ^ 5) - 1.0;
  }
  check_exact(dequant(RLX_Q4_1, b), want);
}

// Bit e of the little-endian u32 in qh is bit 4 of element e.
static int q5_high_bit(const uint8_t qh[4], int e) { return (qh[e / 8] >> (e % 8)) & 1; }

TEST_CASE("q5_0: bit 4 of element e is bit e of qh, w = d (q - 16)", "[quant]") {
  BlockQ5_0 b;
  b.d = kF16Half;
  const uint8_t qh[4] = {0x0f, 0xf0, 0xa5, 0x5a};
  std::memcpy(b.qh, qh, 4);
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>(i | (15 - i) << 4);
  std::vector<double> want(32);
  for (int e = 0; e < 32; ++e) {
    int low = e < 16 ? e : 15 - (e - 16);
    want[e] = 0.5 * ((low | q5_high_bit(qh, e) << 4) - 16);
  }
  check_exact(dequant(RLX_Q5_0, b), want);
  // By hand: element 0: low 0, qh bit 0 = 1 -> q = 16 -> 0. Element 16: low 15, bit 16 of qh
  // (byte 2 = 0xa5, bit 0) = 1 -> q = 31 -> 7.5. Element 4: low 4, bit 4 = 0 -> (4 - 16) / 2.
  std::vector<float> got = dequant(RLX_Q5_0, b);
  CHECK(got[0] == 0.0f);
  CHECK(got[16] == 7.5f);
  CHECK(got[4] == -6.0f);
}

TEST_CASE("q5_1: w = d q + m with a 5-bit q", "[quant]") {
  BlockQ5_1 b;
  b.d = kF16Eighth;
  b.m = kF16Two;
  const uint8_t qh[4] = {0x81, 0x42, 0x24, 0x18};
  std::memcpy(b.qh, qh, 4);
  for (int i = 0; i < 16; ++i) b.qs[i] = static_cast<uint8_t>((5 * i) % 16 | ((7 * i) % 16) << 4);
  std::vector<double> want(32);
  for (int e = 0; e < 32; ++e) {
    int low = e < 16 ? (5 * e) % 16 : (7 * (e - 16)) % 16;
    want[e] = 0.125 * (low | q5_high_bit(qh, e) << 4) + 2.0;
  }
  check_exact(dequant(RLX_Q5_1, b), want);
}

TEST_CASE("q8_0: w = d qs", "[quant]") {
  BlockQ8_0 b;
  b.d = kF16MinusQuart;
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<int8_t>(8 * i - 128);
  std::vector<double> want(32);
  for (int i = 0; i < 32; ++i) want[i] = -0.25 * (8 * i - 128);
  check_exact(dequant(RLX_Q8_0, b), want);
}

// ---- hand-built blocks: K-quants ---------------------------------------------------------------

// Position of element e in the 2-bit planes of Q2_K / Q3_K: byte 32 h + l, bits 2 j.
struct Plane2 {
  int byte, shift, l, hj;
};
static Plane2 plane2(int e) {
  int h = e / 128, j = (e % 128) / 32, l = e % 32;
  return {32 * h + l, 2 * j, l, 4 * h + j};
}

TEST_CASE("q2_k: 16 sub-blocks of 16, 4-bit scale and min, 2-bit q", "[quant]") {
  BlockQ2_K b{};
  b.d = kF16Half;
  b.dmin = kF16Quarter;
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(s | (15 - s) << 4);
  auto q = [](int e) { return (7 * e + e / 5) % 4; };
  for (int e = 0; e < 256; ++e) {
    Plane2 p = plane2(e);
    b.qs[p.byte] |= static_cast<uint8_t>(q(e) << p.shift);
  }
  std::vector<double> want(256);
  for (int e = 0; e < 256; ++e) {
    int s = e / 16;
    want[e] = 0.5 * s * q(e) - 0.25 * (15 - s);
  }
  check_exact(dequant(RLX_Q2_K, b), want);
  // By hand: element 33 is sub-block 2 (scale 2, min 13), byte 1 bits 2-3.
  std::vector<float> got = dequant(RLX_Q2_K, b);
  CHECK(got[33] == static_cast<float>(0.5 * 2 * ((b.qs[1] >> 2) & 3) - 0.25 * 13));
}

TEST_CASE("q3_k: signed 6-bit scales, 3-bit q from qs and hmask", "[quant]") {
  BlockQ3_K b{};
  b.d = kF16Half;
  int sc[16];
  for (int s = 0; s < 16; ++s) {
    sc[s] = 4 * s - 32 + (s % 3);  // spans [-32, 31]
    int u = sc[s] + 32;
    b.scales[s % 8] |= static_cast<uint8_t>((u & 15) << (s < 8 ? 0 : 4));
    b.scales[8 + s % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (s / 4)));
  }
  auto q = [](int e) { return (5 * e + e / 7) % 8 - 4; };  // [-4, 3]
  for (int e = 0; e < 256; ++e) {
    Plane2 p = plane2(e);
    int u = q(e) + 4;
    b.qs[p.byte] |= static_cast<uint8_t>((u & 3) << p.shift);
    if (u & 4) b.hmask[p.l] |= static_cast<uint8_t>(1 << p.hj);
  }
  std::vector<double> want(256);
  for (int e = 0; e < 256; ++e) want[e] = 0.5 * sc[e / 16] * q(e);
  check_exact(dequant(RLX_Q3_K, b), want);

  // The scale packing by hand: scales[0] = 0x21 gives the low nibbles of sub-blocks 0 (1) and
  // 8 (2); scales[8] = 0b11'10'01'00 gives the high 2 bits of sub-blocks 0, 4, 8, 12.
  BlockQ3_K c{};
  c.d = 0x3c00;  // 1.0
  c.scales[0] = 0x21;
  c.scales[8] = 0xe4;
  std::memset(c.hmask, 0xff, sizeof c.hmask);  // every q = low bits - 0
  std::memset(c.qs, 0x55, sizeof c.qs);        // every 2-bit field = 1 -> q = 1
  std::vector<float> y = dequant(RLX_Q3_K, c);
  CHECK(y[0] == -31.0f);                    // sub-block 0: (1 | 0 << 4) - 32
  CHECK(y[4 * 16] == -16.0f);               // sub-block 4: (0 | 1 << 4) - 32
  CHECK(y[8 * 16] == 2.0f);                 // sub-block 8: (2 | 2 << 4) - 32
  CHECK(y[12 * 16] == 16.0f);               // sub-block 12: (0 | 3 << 4) - 32
  CHECK(y[1 * 16] == -32.0f);               // sub-block 1: all zero bits
  std::memset(c.hmask, 0, sizeof c.hmask);  // now q = 1 - 4 = -3
  y = dequant(RLX_Q3_K, c);
  CHECK(y[0] == 93.0f);
}

// Packs 6-bit scales and mins the way Q4_K / Q5_K store them (element-wise restatement).
static void pack_k4(const int sc[8], const int mn[8], uint8_t out[12]) {
  std::memset(out, 0, 12);
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      out[s] |= static_cast<uint8_t>(sc[s]);
      out[s + 4] |= static_cast<uint8_t>(mn[s]);
    } else {
      out[s + 4] |= static_cast<uint8_t>((sc[s] & 15) | (mn[s] & 15) << 4);
      out[s - 4] |= static_cast<uint8_t>((sc[s] >> 4) << 6);
      out[s] |= static_cast<uint8_t>((mn[s] >> 4) << 6);
    }
  }
}

TEST_CASE("q4_k: 8 sub-blocks of 32, packed 6-bit scales and mins", "[quant]") {
  const int sc[8] = {1, 63, 17, 32, 45, 9, 60, 33};
  const int mn[8] = {0, 5, 63, 48, 16, 31, 2, 59};
  BlockQ4_K b{};
  b.d = kF16Half;
  b.dmin = kF16Eighth;
  pack_k4(sc, mn, b.scales);
  auto q = [](int e) { return (11 * e + e / 3) % 16; };
  // Element e = 64 j + 32 k + l is nibble k of qs[32 j + l].
  for (int e = 0; e < 256; ++e) {
    int j = e / 64, k = (e % 64) / 32, l = e % 32;
    b.qs[32 * j + l] |= static_cast<uint8_t>(q(e) << (4 * k));
  }
  std::vector<double> want(256);
  for (int e = 0; e < 256; ++e) want[e] = 0.5 * sc[e / 32] * q(e) - 0.125 * mn[e / 32];
  check_exact(dequant(RLX_Q4_K, b), want);

  // The packing by hand for sub-block 5: sc = 9 = 0b001001, mn = 31 = 0b011111. Low nibbles go
  // to scales[9] = 0xf9, the high 2 bits of sc to scales[1] bits 6-7 (0), of mn to scales[5]
  // bits 6-7 (1).
  CHECK(b.scales[9] == 0xf9);
  CHECK((b.scales[1] >> 6) == 0);
  CHECK((b.scales[5] >> 6) == 1);
}

TEST_CASE("q5_k: q4_k plus bit 4 of element 64 j + 32 k + l in bit 2 j + k of qh[l]", "[quant]") {
  const int sc[8] = {63, 1, 2, 40, 7, 33, 21, 50};
  const int mn[8] = {63, 0, 10, 1, 44, 3, 60, 12};
  BlockQ5_K b{};
  b.d = kF16Quarter;
  b.dmin = kF16Half;
  pack_k4(sc, mn, b.scales);
  auto q = [](int e) { return (13 * e + e / 9) % 32; };
  for (int e = 0; e < 256; ++e) {
    int j = e / 64, k = (e % 64) / 32, l = e % 32;
    b.qs[32 * j + l] |= static_cast<uint8_t>((q(e) & 15) << (4 * k));
    b.qh[l] |= static_cast<uint8_t>((q(e) >> 4) << (2 * j + k));
  }
  std::vector<double> want(256);
  for (int e = 0; e < 256; ++e) want[e] = 0.25 * sc[e / 32] * q(e) - 0.5 * mn[e / 32];
  check_exact(dequant(RLX_Q5_K, b), want);
}

TEST_CASE("q6_k: 4 low bits in ql, 2 high bits in qh, int8 scales, w = d sc (q - 32)", "[quant]") {
  BlockQ6_K b{};
  b.d = kF16Quarter;
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(17 * s - 128);
  auto q = [](int e) { return (29 * e + e / 11) % 64; };
  // e = 128 h + 32 c + l: low nibble c / 2 of ql[64 h + 32 (c % 2) + l], high bits 2 c of
  // qh[32 h + l].
  for (int e = 0; e < 256; ++e) {
    int h = e / 128, c = (e % 128) / 32, l = e % 32;
    b.ql[64 * h + 32 * (c % 2) + l] |= static_cast<uint8_t>((q(e) & 15) << (4 * (c / 2)));
    b.qh[32 * h + l] |= static_cast<uint8_t>((q(e) >> 4) << (2 * c));
  }
  std::vector<double> want(256);
  for (int e = 0; e < 256; ++e) want[e] = 0.25 * (17 * (e / 16) - 128) * (q(e) - 32);
  check_exact(dequant(RLX_Q6_K, b), want);
  // By hand: element 64 (h 0, c 2, l 0) is the high nibble of ql[0].
  CHECK(dequant(RLX_Q6_K, b)[64] ==
        static_cast<float>(0.25 * (17 * 4 - 128) *
                           ((b.ql[0] >> 4 | ((b.qh[0] >> 4) & 3) << 4) - 32)));
}

TEST_CASE("q8_k: f32 d, w = d qs", "[quant]") {
  BlockQ8_K b{};
  b.d = 0.375f;
  for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>((37 * i) % 256 - 128);
  std::vector<double> want(256);
  for (int i = 0; i < 256; ++i) want[i] = 0.375 * ((37 * i) % 256 - 128);
  check_exact(dequant(RLX_Q8_K, b), want);
}

TEST_CASE("a row is its blocks back to back, at any alignment", "[quant]") {
  // Two Q8_0 blocks at an odd address.
  std::vector<uint8_t> raw(1 + 2 * 34);
  uint8_t* p = raw.data() + 1;
  uint16_t d0 = f16_bits_of(0.5), d1 = f16_bits_of(-2.0);
  std::memcpy(p, &d0, 2);
  std::memcpy(p + 34, &d1, 2);
  for (int i = 0; i < 32; ++i) {
    p[2 + i] = static_cast<uint8_t>(i);
    p[36 + i] = static_cast<uint8_t>(-i);
  }
  float y[64];
  REQUIRE(dequantize_row(RLX_Q8_0, p, y, 64));
  for (int i = 0; i < 32; ++i) {
    CHECK(y[i] == 0.5f * i);
    CHECK(y[32 + i] == 2.0f * i);
  }
}

// ---- random blocks: every element against the format formula, in ggml's operation order -------

namespace {

// f16 scale at byte offset `at` of a raw block.
float f16_field(const std::vector<uint8_t>& b, size_t at) {
  return f16_to_f32(static_cast<uint16_t>(b[at] | b[at + 1] << 8));
}

// Element e of a raw block, from the layout comments in quant.h, as ggml evaluates it: the
// sub-block factors first (d * sc, dmin * m), then one multiply and one add per element. (The
// products are exact in f32, so FMA contraction could not change the results either.)
float element(rlx_dtype t, const std::vector<uint8_t>& b, int e) {
  auto bit = [&](size_t byte, int k) { return (b[byte] >> k) & 1; };
  switch (t) {
    case RLX_Q4_0: {  // d | qs[16]
      int q = e < 16 ? b[2 + e] & 15 : b[2 + e - 16] >> 4;
      return static_cast<float>(q - 8) * f16_field(b, 0);
    }
    case RLX_Q4_1: {  // d | m | qs[16]
      int q = e < 16 ? b[4 + e] & 15 : b[4 + e - 16] >> 4;
      float p = static_cast<float>(q) * f16_field(b, 0);
      return p + f16_field(b, 2);
    }
    case RLX_Q5_0: {  // d | qh[4] | qs[16]
      int q = (e < 16 ? b[6 + e] & 15 : b[6 + e - 16] >> 4) | bit(2 + e / 8, e % 8) << 4;
      return static_cast<float>(q - 16) * f16_field(b, 0);
    }
    case RLX_Q5_1: {  // d | m | qh[4] | qs[16]
      int q = (e < 16 ? b[8 + e] & 15 : b[8 + e - 16] >> 4) | bit(4 + e / 8, e % 8) << 4;
      float p = static_cast<float>(q) * f16_field(b, 0);
      return p + f16_field(b, 2);
    }
    case RLX_Q8_0:  // d | qs[32]
      return static_cast<float>(static_cast<int8_t>(b[2 + e])) * f16_field(b, 0);
    case RLX_Q2_K: {  // scales[16] | qs[64] | d | dmin
      int sc = b[e / 16], h = e / 128, j = (e % 128) / 32, l = e % 32;
      int q = (b[16 + 32 * h + l] >> (2 * j)) & 3;
      float dl = f16_field(b, 80) * static_cast<float>(sc & 15);
      float ml = f16_field(b, 82) * static_cast<float>(sc >> 4);
      float p = dl * static_cast<float>(q);
      return p - ml;
    }
    case RLX_Q3_K: {  // hmask[32] | qs[64] | scales[12] | d
      int s = e / 16, h = e / 128, j = (e % 128) / 32, l = e % 32;
      int lo = s < 8 ? b[96 + s] & 15 : b[96 + s - 8] >> 4;
      int hi = (b[96 + 8 + s % 4] >> (2 * (s / 4))) & 3;
      int q = ((b[32 + 32 * h + l] >> (2 * j)) & 3) - (bit(l, 4 * h + j) ? 0 : 4);
      float dl = f16_field(b, 108) * static_cast<float>((lo | hi << 4) - 32);
      return dl * static_cast<float>(q);
    }
    case RLX_Q4_K:
    case RLX_Q5_K: {  // d | dmin | scales[12] | (q5: qh[32]) | qs[128]
      const size_t qs = t == RLX_Q4_K ? 16 : 48;
      int s = e / 32, j = e / 64, k = (e % 64) / 32, l = e % 32;
      const uint8_t* sb = b.data() + 4;
      int sc = s < 4 ? sb[s] & 63 : (sb[s + 4] & 15) | (sb[s - 4] >> 6) << 4;
      int mn = s < 4 ? sb[s + 4] & 63 : (sb[s + 4] >> 4) | (sb[s] >> 6) << 4;
      int q = (b[qs + 32 * j + l] >> (4 * k)) & 15;
      if (t == RLX_Q5_K) q += bit(16 + l, s) << 4;
      float dl = f16_field(b, 0) * static_cast<float>(sc);
      float ml = f16_field(b, 2) * static_cast<float>(mn);
      float p = dl * static_cast<float>(q);
      return p - ml;
    }
    case RLX_Q6_K: {  // ql[128] | qh[64] | scales[16] | d
      int h = e / 128, c = (e % 128) / 32, l = e % 32;
      int lo = (b[64 * h + 32 * (c % 2) + l] >> (4 * (c / 2))) & 15;
      int hi = (b[128 + 32 * h + l] >> (2 * c)) & 3;
      float dl = f16_field(b, 208) * static_cast<float>(static_cast<int8_t>(b[192 + e / 16]));
      return dl * static_cast<float>((lo | hi << 4) - 32);
    }
    case RLX_Q8_K: {  // f32 d | qs[256] | bsums[16]
      float d;
      std::memcpy(&d, b.data(), 4);
      return d * static_cast<float>(static_cast<int8_t>(b[4 + e]));
    }
    default: FAIL("no formula for dtype " << t); return 0;
  }
}

}  // namespace

TEST_CASE("random blocks dequantize bit-exactly to the format formula", "[quant]") {
  std::mt19937 rng(99);
  const rlx_dtype types[] = {RLX_Q4_0, RLX_Q4_1, RLX_Q5_0, RLX_Q5_1, RLX_Q8_0, RLX_Q2_K,
                             RLX_Q3_K, RLX_Q4_K, RLX_Q5_K, RLX_Q6_K, RLX_Q8_K};
  for (rlx_dtype t : types) {
    INFO("dtype " << t);
    const int n = static_cast<int>(block_elems(t));
    std::vector<uint8_t> b(static_cast<size_t>(block_bytes(t)));
    for (int trial = 0; trial < 200; ++trial) {
      for (uint8_t& byte : b) byte = static_cast<uint8_t>(rng());
      // Keep the scales finite and moderate (random exponents 2^-8 .. 2^3, random mantissa).
      auto set_f16 = [&](size_t at) {
        uint16_t h = static_cast<uint16_t>((rng() & 0x83ff) | (7 + rng() % 11) << 10);
        b[at] = static_cast<uint8_t>(h);
        b[at + 1] = static_cast<uint8_t>(h >> 8);
      };
      switch (t) {
        case RLX_Q4_1:
        case RLX_Q5_1:
        case RLX_Q4_K:
        case RLX_Q5_K: set_f16(0), set_f16(2); break;
        case RLX_Q2_K: set_f16(80), set_f16(82); break;
        case RLX_Q3_K: set_f16(108); break;
        case RLX_Q6_K: set_f16(208); break;
        case RLX_Q8_K: {
          float d = std::ldexp(static_cast<float>(rng() % 1000 + 1), -14);
          std::memcpy(b.data(), &d, 4);
          break;
        }
        default: set_f16(0);
      }
      std::vector<float> got(static_cast<size_t>(n));
      REQUIRE(dequantize_row(t, b.data(), got.data(), n));
      for (int e = 0; e < n; ++e) {
        INFO("element " << e);
        const float want = element(t, b, e);
        REQUIRE(std::memcmp(&got[static_cast<size_t>(e)], &want, 4) == 0);
      }
    }
  }
}

// ---- quantize -> dequantize --------------------------------------------------------------------

namespace {

struct RoundTrip {
  rlx_dtype t;
  double uniform_nmse;  // bound on uniform [-1, 1] data
  double gauss_nmse;    // bound on N(0, 0.02) data (weight-like, heavier-tailed blocks)
};

// Measured with this header's quantizers (reference quality) plus ~1.5x headroom; in line with
// step^2 / 12 for each format's step size.
const RoundTrip kRoundTrips[] = {
    {RLX_F16, 6e-8, 7e-8},      {RLX_BF16, 4e-6, 4e-6},     {RLX_Q8_0, 2e-5, 4.5e-5},
    {RLX_Q8_K, 2.5e-5, 8e-5},   {RLX_Q6_K, 3.2e-4, 5.5e-4}, {RLX_Q5_0, 1.5e-3, 2.9e-3},
    {RLX_Q5_1, 1.3e-3, 2.1e-3}, {RLX_Q5_K, 1.3e-3, 2.2e-3}, {RLX_Q4_0, 6.5e-3, 1.15e-2},
    {RLX_Q4_1, 5.6e-3, 9.3e-3}, {RLX_Q4_K, 5.7e-3, 9.3e-3}, {RLX_Q3_K, 2.8e-2, 3.7e-2},
    {RLX_Q2_K, 0.12, 0.165},
};

std::vector<float> round_trip(rlx_dtype t, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> packed(static_cast<size_t>(row_bytes(t, n)));
  REQUIRE(quantize_row(t, x.data(), packed.data(), n));
  std::vector<float> y(x.size());
  REQUIRE(dequantize_row(t, packed.data(), y.data(), n));
  return y;
}

}  // namespace

TEST_CASE("quantize -> dequantize stays within each format's error", "[quant]") {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::normal_distribution<float> gauss(0.0f, 0.02f);  // weight-like scale
  const int64_t n = 256 * 16;
  std::vector<float> u(n), g(n), pos(n);
  for (int64_t i = 0; i < n; ++i) {
    u[i] = uni(rng);
    g[i] = gauss(rng);
    pos[i] = 3.0f + uni(rng);  // all positive, far from 0: the K-quant min must cope
  }
  for (const RoundTrip& r : kRoundTrips) {
    INFO("dtype " << r.t);
    CHECK(nmse(u, round_trip(r.t, u)) < r.uniform_nmse);
    CHECK(nmse(g, round_trip(r.t, g)) < r.gauss_nmse);
    CHECK(nmse(pos, round_trip(r.t, pos)) < r.uniform_nmse);  // relative to a larger signal
  }
}

TEST_CASE("quantizers handle zeros, constants and outliers", "[quant]") {
  for (const RoundTrip& r : kRoundTrips) {
    INFO("dtype " << r.t);
    std::vector<float> zero(512, 0.0f);
    for (float v : round_trip(r.t, zero)) CHECK(v == 0.0f);
    std::vector<float> c(512, -0.75f);  // constant block: representable within its format
    for (float v : round_trip(r.t, c)) CHECK(std::fabs(v + 0.75f) < 0.75f * 0.02f);
    std::vector<float> spike(512, 0.0f);
    spike[37] = 100.0f;
    spike[300] = -50.0f;
    std::vector<float> y = round_trip(r.t, spike);
    CHECK(std::fabs(y[37] - 100.0f) < 1.0f);
    CHECK(std::fabs(y[300] + 50.0f) < 1.0f);
    for (size_t i = 0; i < y.size(); ++i)
      if (i != 37 && i != 300) CHECK(std::fabs(y[i]) < 100.0f / 3);
  }
}

TEST_CASE("values already on a format's grid survive a round trip exactly", "[quant]") {
  // Q8_0 with amax = 127 * 2^-7: d = 2^-7 exactly in f16, every multiple of d round-trips.
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>((i * 13) % 255 - 127) * 0x1p-7f;
  x[5] = 127 * 0x1p-7f;
  x[40] = -127 * 0x1p-7f;
  std::vector<float> y = round_trip(RLX_Q8_0, x);
  for (int i = 0; i < 64; ++i) CHECK(y[i] == x[i]);
  // Q4_0: values d * (q - 8) with the block's extreme at -8 d.
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>((i * 5) % 16 - 8) * 0.25f;
  y = round_trip(RLX_Q4_0, x);
  for (int i = 0; i < 64; ++i) CHECK(y[i] == x[i]);
}

TEST_CASE("q8_k bsums are the sums of 16 quants", "[quant]") {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = std::sin(0.1f * i);
  BlockQ8_K b;
  REQUIRE(quantize_row(RLX_Q8_K, x.data(), &b, 256));
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += b.qs[16 * g + i];
    CHECK(b.bsums[g] == sum);
  }
}
