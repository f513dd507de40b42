// EMBED, f32 table: out[i, :] = table[ids[i], :]. An id outside [0, v) is a run-time error, never
// a wild read: its row is written as zeros and the first bad (node, id) is recorded in the
// program's error word, which the host checks after the run and reports.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer T { float table[]; };
layout(std430, set = 0, binding = 1) buffer I { int ids[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };
layout(std430, set = 0, binding = 4) buffer E { uint err[]; };  // [node + 1, bad id]

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
      o[p.o_out + e] = table[p.o_in0 + uint(id) * p.cols + j];
    }
  }
}
