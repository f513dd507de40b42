// MATMUL with 16-bit float weights: out[m, n] = sum_k x[m, k] * w[n, k], w f16 (mode 0) or bf16
// (mode 1). The weights are read as 32-bit words holding two values (o_in1 counts words; the
// value at half-index e is word e / 2, low half first), so no 16-bit storage feature is needed.
// Same shape of work as matmul.comp: one workgroup per output element, 64 threads over k.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 64
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer W { uint w[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };

shared float red[WG];

float weight(uint e) {
  const uint word = w[e >> 1];
  if (p.mode == 0u) return unpackHalf2x16(word)[e & 1u];
  return uintBitsToFloat((e & 1u) == 0u ? word << 16 : word & 0xffff0000u);
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint m = gl_WorkGroupID.y; m < p.n; m += gl_NumWorkGroups.y) {
    for (uint c = gl_WorkGroupID.x; c < p.cols; c += gl_NumWorkGroups.x) {
      const uint xi = p.o_in0 + m * p.k, wi = 2u * p.o_in1 + c * p.k;
      float acc = 0.0;
      for (uint j = t; j < p.k; j += WG) acc += x[xi + j] * weight(wi + j);
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
