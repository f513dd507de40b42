// EMBED with a 16-bit float table (mode 0 f16, 1 bf16), read as 32-bit words of two values
// (see matmul16.comp): out[i, :] = table[ids[i], :]. An id outside [0, v) writes a zero row and
// records the error, as embed.comp does.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer T { uint table[]; };
layout(std430, set = 0, binding = 1) buffer I { int ids[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };
layout(std430, set = 0, binding = 4) buffer E { uint err[]; };  // [node + 1, bad id]

float value(uint e) {
  const uint word = table[e >> 1];
  if (p.mode == 0u) return unpackHalf2x16(word)[e & 1u];
  return uintBitsToFloat((e & 1u) == 0u ? word << 16 : word & 0xffff0000u);
}

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint total = p.n * p.cols;  // s rows of d
  for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
    const uint i = e / p.cols, j = e % p.cols;
    const int id = ids[p.o_in1 + i];
    if (id < 0 || uint(id) >= p.nb) {
      o[p.o_out + e] = 0.0;
      if (atomicCompSwap(err[0], 0u, p.node + 1u) == 0u) err[1] = uint(id);
    } else {
      o[p.o_out + e] = value(2u * p.o_in0 + uint(id) * p.cols + j);
    }
  }
}
