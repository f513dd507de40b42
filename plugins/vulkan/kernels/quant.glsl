// GGUF block-quantized weights read in place from a uint[] storage buffer `QBUF` (defined by the
// including shader), one element at a time. The layouts and float expressions follow
// core/include/rlx/quant.h (ggml's dequantize_row_*) term by term. Blocks are 18, 20, 22, 24,
// 34, 84, 110, 144, 176, 210 or 292 bytes, so nothing is 4-byte aligned in general: every field
// is read byte by byte (byte_at) and reassembled little-endian.
//
// `mode` (push constant) selects the type; kernels.cpp's quant_mode() is the host side:
//   0 q4_0  1 q4_1  2 q5_0  3 q5_1  4 q8_0  5 q2_k  6 q3_k  7 q4_k  8 q5_k  9 q6_k  10 q8_k

uint byte_at(uint off) { return (QBUF[off >> 2] >> ((off & 3u) * 8u)) & 0xffu; }
uint u16_at(uint off) { return byte_at(off) | (byte_at(off + 1u) << 8); }
uint u32_at(uint off) { return u16_at(off) | (u16_at(off + 2u) << 16); }
float f16_at(uint off) { return unpackHalf2x16(u16_at(off)).x; }
int i8_at(uint off) { return int(byte_at(off) << 24) >> 24; }

uint q_block_elems(uint mode) { return mode <= 4u ? 32u : 256u; }
uint q_block_bytes(uint mode) {
  switch (mode) {
    case 0u: return 18u;
    case 1u: return 20u;
    case 2u: return 22u;
    case 3u: return 24u;
    case 4u: return 34u;
    case 5u: return 84u;
    case 6u: return 110u;
    case 7u: return 144u;
    case 8u: return 176u;
    case 9u: return 210u;
    default: return 292u;
  }
}

// Q4_K / Q5_K: scale and min of sub-block s (0..7) from the 12 packed bytes at `sc`.
void k4_scale_min(uint sc, uint s, out uint scale, out uint mn) {
  if (s < 4u) {
    scale = byte_at(sc + s) & 63u;
    mn = byte_at(sc + s + 4u) & 63u;
  } else {
    scale = (byte_at(sc + s + 4u) & 15u) | ((byte_at(sc + s - 4u) >> 6) << 4);
    mn = (byte_at(sc + s + 4u) >> 4) | ((byte_at(sc + s) >> 6) << 4);
  }
}

// Element e of the block starting at byte b.
float dq(uint mode, uint b, uint e) {
  switch (mode) {
    case 0u: {  // q4_0: d, qs[16]
      const float d = f16_at(b);
      const uint q = (byte_at(b + 2u + (e & 15u)) >> ((e >> 4) * 4u)) & 15u;
      return float(int(q) - 8) * d;
    }
    case 1u: {  // q4_1: d, m, qs[16]
      const float d = f16_at(b), m = f16_at(b + 2u);
      const uint q = (byte_at(b + 4u + (e & 15u)) >> ((e >> 4) * 4u)) & 15u;
      return float(q) * d + m;
    }
    case 2u: {  // q5_0: d, qh[4], qs[16]
      const float d = f16_at(b);
      const uint qh = u32_at(b + 2u);
      const uint q = ((byte_at(b + 6u + (e & 15u)) >> ((e >> 4) * 4u)) & 15u) | (((qh >> e) & 1u) << 4);
      return float(int(q) - 16) * d;
    }
    case 3u: {  // q5_1: d, m, qh[4], qs[16]
      const float d = f16_at(b), m = f16_at(b + 2u);
      const uint qh = u32_at(b + 4u);
      const uint q = ((byte_at(b + 8u + (e & 15u)) >> ((e >> 4) * 4u)) & 15u) | (((qh >> e) & 1u) << 4);
      return float(q) * d + m;
    }
    case 4u:  // q8_0: d, qs[32]
      return float(i8_at(b + 2u + e)) * f16_at(b);
    case 5u: {  // q2_k: scales[16], qs[64], d, dmin
      const uint h = e >> 7, j = (e >> 5) & 3u, l = e & 31u, s = e >> 4;
      const float d = f16_at(b + 80u), dmin = f16_at(b + 82u);
      const uint sc = byte_at(b + s);
      const float dl = d * float(sc & 15u), ml = dmin * float(sc >> 4);
      return dl * float((byte_at(b + 16u + 32u * h + l) >> (2u * j)) & 3u) - ml;
    }
    case 6u: {  // q3_k: hmask[32], qs[64], scales[12], d
      const uint h = e >> 7, j = (e >> 5) & 3u, l = e & 31u, s = e >> 4;
      const float d = f16_at(b + 108u);
      const uint sb = b + 96u;
      const uint lo = s < 8u ? byte_at(sb + s) & 15u : byte_at(sb + s - 8u) >> 4;
      const uint hi = (byte_at(sb + 8u + (s & 3u)) >> (2u * (s >> 2))) & 3u;
      const float dl = d * float(int(lo | (hi << 4)) - 32);
      const int q = int((byte_at(b + 32u + 32u * h + l) >> (2u * j)) & 3u) -
                    (((byte_at(b + l) >> (4u * h + j)) & 1u) != 0u ? 0 : 4);
      return dl * float(q);
    }
    case 7u:    // q4_k: d, dmin, scales[12], qs[128]
    case 8u: {  // q5_k: d, dmin, scales[12], qh[32], qs[128]
      const uint j = e >> 6, k = (e >> 5) & 1u, l = e & 31u, s = e >> 5;
      const float d = f16_at(b), dmin = f16_at(b + 2u);
      uint sc, mn;
      k4_scale_min(b + 4u, s, sc, mn);
      const float dl = d * float(sc), ml = dmin * float(mn);
      uint q;
      if (mode == 7u) {
        q = (byte_at(b + 16u + 32u * j + l) >> (4u * k)) & 15u;
      } else {
        q = ((byte_at(b + 48u + 32u * j + l) >> (4u * k)) & 15u) +
            (((byte_at(b + 16u + l) >> s) & 1u) != 0u ? 16u : 0u);
      }
      return dl * float(q) - ml;
    }
    case 9u: {  // q6_k: ql[128], qh[64], scales[16] (int8), d
      const uint h = e >> 7, c = (e >> 5) & 3u, l = e & 31u, s = e >> 4;
      const float d = f16_at(b + 208u);
      const float dl = d * float(i8_at(b + 192u + s));
      const uint lo = (byte_at(b + 64u * h + 32u * (c & 1u) + l) >> (4u * (c >> 1))) & 15u;
      const uint hi = (byte_at(b + 128u + 32u * h + l) >> (2u * c)) & 3u;
      return dl * float(int(lo | (hi << 4)) - 32);
    }
    default: {  // q8_k: d (f32), qs[256], bsums[16]
      const float d = uintBitsToFloat(u32_at(b));
      return d * float(i8_at(b + 4u + e));
    }
  }
}

// Element e of a row of blocks starting at byte `row`.
float dq_row(uint mode, uint row, uint e) {
  const uint be = q_block_elems(mode);
  return dq(mode, row + (e / be) * q_block_bytes(mode), e % be);
}
