// ARGMAX over the last dim: out[row] = the index of the largest value, the first on ties.
// One workgroup per row (grid-stride over rows); 256 threads keep their own best (value, index)
// and reduce in shared memory, preferring the larger value and then the smaller index.
// Push: n = rows, cols = the last dim.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 256
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) buffer A { float a[]; };
layout(std430, set = 0, binding = 3) buffer O { int o[]; };

shared float sv[WG];
shared uint si[WG];

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.n; row += gl_NumWorkGroups.x) {
    const uint ai = p.o_in0 + row * p.cols;
    float bv = -1.0 / 0.0;
    uint bi = 0xffffffffu;
    for (uint j = t; j < p.cols; j += WG) {
      const float v = a[ai + j];
      if (bi == 0xffffffffu || v > bv) { bv = v; bi = j; }  // j ascends: first wins ties
    }
    sv[t] = bv;
    si[t] = bi;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
      if (t < s) {
        const float v = sv[t + s];
        const uint i = si[t + s];
        if (i != 0xffffffffu &&
            (si[t] == 0xffffffffu || v > sv[t] || (v == sv[t] && i < si[t]))) {
          sv[t] = v;
          si[t] = i;
        }
      }
      barrier();
    }
    if (t == 0u) o[p.o_out + row] = int(si[0]);
    barrier();
  }
}
