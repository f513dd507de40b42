// EMBED with a GGUF block-quantized table read in place (quant.glsl, `mode` the type): out[i, :]
// = dequantized row ids[i]. o_in0 is a byte offset (any alignment). An id outside
// [0, v) writes a zero row and records the error, as embed.comp does.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer T { uint table[]; };
layout(std430, set = 0, binding = 1) buffer I { int ids[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };
layout(std430, set = 0, binding = 4) buffer E { uint err[]; };  // [node + 1, bad id]
#define QBUF table
#include "quant.glsl"

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint total = p.n * p.cols;  // s rows of d
  const uint row_bytes = (p.cols / q_block_elems(p.mode)) * q_block_bytes(p.mode);
  for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
    const uint i = e / p.cols, j = e % p.cols;
    const int id = ids[p.o_in1 + i];
    if (id < 0 || uint(id) >= p.nb) {
      o[p.o_out + e] = 0.0;
      if (atomicCompSwap(err[0], 0u, p.node + 1u) == 0u) err[1] = uint(id);
    } else {
      o[p.o_out + e] = dq_row(p.mode, p.o_in0 + uint(id) * row_bytes, j);
    }
  }
}
