// MATMUL with GGUF block-quantized weights read in place (no f32 copy): out[m, n] = sum_k
// x[m, k] * w[n, k]. w is a uint[] buffer; o_in1 is a byte offset (any alignment), each row of w is k / block_elems blocks (quant.glsl, `mode` the type). Same shape of
// work as matmul.comp: one workgroup per output element, 64 threads over k, element by element.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 64
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer W { uint w[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };
#define QBUF w
#include "quant.glsl"

shared float red[WG];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint be = q_block_elems(p.mode), bb = q_block_bytes(p.mode);
  const uint row_bytes = (p.k / be) * bb;
  for (uint m = gl_WorkGroupID.y; m < p.n; m += gl_NumWorkGroups.y) {
    for (uint c = gl_WorkGroupID.x; c < p.cols; c += gl_NumWorkGroups.x) {
      const uint xi = p.o_in0 + m * p.k, wrow = p.o_in1 + c * row_bytes;
      float acc = 0.0;
      for (uint j = t; j < p.k; j += WG) acc += x[xi + j] * dq(p.mode, wrow + (j / be) * bb, j % be);
      red[t] = acc;
      barrier();
      for (uint s = WG / 2; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        barrier();
      }
      if (t == 0u) o[p.o_out + m * p.cols + c] = red[0];
      barrier();
    }
  }
}
