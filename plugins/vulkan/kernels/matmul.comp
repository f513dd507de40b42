// MATMUL, f32 weights: out[m, n] = sum_k x[m, k] * w[n, k]   (x [rows, k] @ w [n, k]^T)
// One workgroup per output element (grid-stride over n in x and rows in y): 64 threads stride
// over k (consecutive threads read consecutive weights: coalesced), then reduce in shared
// memory. Simple and memory-bound like decode; a tiled kernel for prefill is future work.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 64
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer W { float w[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };

shared float red[WG];

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint m = gl_WorkGroupID.y; m < p.n; m += gl_NumWorkGroups.y) {
    for (uint c = gl_WorkGroupID.x; c < p.cols; c += gl_NumWorkGroups.x) {
      const uint xi = p.o_in0 + m * p.k, wi = p.o_in1 + c * p.k;
      float acc = 0.0;
      for (uint j = t; j < p.k; j += WG) acc += x[xi + j] * w[wi + j];
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
