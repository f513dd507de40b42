// RMS_NORM (mode 0: out = x / sqrt(mean(x^2) + eps) * w) and SOFTMAX (mode 1) over the last dim.
// One workgroup per row (grid-stride over rows), 256 threads reduce through shared memory.
// Thread t only ever touches columns t, t+256, ... of its row, so out may alias x.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 256
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer W { float w[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };

shared float red[WG];

// Tree reduction of v over the workgroup: op 0 sum, 1 max. Uniform control flow.
float reduce(float v, uint op) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = op == 0u ? red[t] + red[t + s] : max(red[t], red[t + s]);
    barrier();
  }
  float r = red[0];
  barrier();  // red[] is reused by the next reduction
  return r;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.n; row += gl_NumWorkGroups.x) {
    const uint xi = p.o_in0 + row * p.cols, oi = p.o_out + row * p.cols;
    if (p.mode == 0u) {
      float ss = 0.0;
      for (uint j = t; j < p.cols; j += WG) ss += x[xi + j] * x[xi + j];
      const float inv = inversesqrt(reduce(ss, 0u) / float(p.cols) + p.f0);
      for (uint j = t; j < p.cols; j += WG) o[oi + j] = x[xi + j] * inv * w[p.o_in1 + j];
    } else {
      float m = -3.402823466e38;
      for (uint j = t; j < p.cols; j += WG) m = max(m, x[xi + j]);
      m = reduce(m, 1u);
      float s = 0.0;
      for (uint j = t; j < p.cols; j += WG) s += exp(x[xi + j] - m);
      const float inv = 1.0 / reduce(s, 0u);
      for (uint j = t; j < p.cols; j += WG) o[oi + j] = exp(x[xi + j] - m) * inv;
    }
  }
}
