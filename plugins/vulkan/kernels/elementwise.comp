// ADD, MUL (b broadcast over a's leading rows: b[i % nb]), SCALE, SILU, SILU_MUL.
// mode: 0 add, 1 mul, 2 scale, 3 silu, 4 silu_mul. Each element depends only on the inputs at
// the same index, so out may alias input 0 (in-place).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer A { float a[]; };
layout(std430, set = 0, binding = 1) buffer B { float b[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };

float silu(float x) { return x / (1.0 + exp(-x)); }

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    float x = a[p.o_in0 + i];
    float r;
    if (p.mode == 0u) r = x + b[p.o_in1 + i % p.nb];
    else if (p.mode == 1u) r = x * b[p.o_in1 + i % p.nb];
    else if (p.mode == 2u) r = x * p.f0;
    else if (p.mode == 3u) r = silu(x);
    else r = silu(x) * b[p.o_in1 + i];
    o[p.o_out + i] = r;
  }
}
