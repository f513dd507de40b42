// ROPE: rotate pairs of each head's first r dims by position-dependent angles.
//   mode bit 0: 0 = pairs (x[2i], x[2i+1]) (GGUF llama), 1 = pairs (x[i], x[i + r/2]) (HF / neox)
//   mode bit 1: freq_factors (input 2, [r/2]) divide the frequencies
//   angle_i = pos * theta^(-2i/r) / freq_factors[i]
// As in the cpu backend, the angle is computed in double (angles reach 10^4+ rad at long
// context, where f32 keeps little of the fraction): theta^(-2i/r) = step^i with step =
// theta^(-2/r) computed on the host in double (its bits are f0 and u0), raised by squaring.
// The angle is reduced to [-pi, pi] in double; only then are sin / cos taken in f32. Needs
// shaderFloat64 (node_problem refuses rope on a device without it).
// Push: n = s rows, nb = h heads, cols = d, k = r. One invocation per (row, head, item), where
// items [0, r/2) rotate a pair and items [r/2, r/2 + d - r) copy a pass-through dim. Every
// invocation reads what it writes first, so out may alias x.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) buffer X { float x[]; };
layout(std430, set = 0, binding = 1) buffer P { int pos[]; };
layout(std430, set = 0, binding = 2) buffer F { float ff[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };

const double kTwoPi = 6.283185307179586476925286766559LF;

void main() {
  const uint half_r = p.k / 2u;
  const uint per_head = half_r + (p.cols - p.k);
  const uint total = p.n * p.nb * per_head;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const double step = packDouble2x32(uvec2(floatBitsToUint(p.f0), p.u0));
  for (uint e = gl_GlobalInvocationID.x; e < total; e += stride) {
    const uint item = e % per_head, rh = e / per_head;  // rh = row * h + head
    const uint row = rh / p.nb;
    const uint base = rh * p.cols;
    if (item >= half_r) {
      const uint c = p.k + (item - half_r);
      o[p.o_out + base + c] = x[p.o_in0 + base + c];
      continue;
    }
    const uint i = item;
    // step^i by squaring
    double f = 1.0LF, b = step;
    for (uint q = i; q != 0u; q >>= 1) {
      if ((q & 1u) != 0u) f *= b;
      b *= b;
    }
    if ((p.mode & 2u) != 0u) f /= double(ff[p.o_in2 + i]);
    double a = double(pos[p.o_in1 + row]) * f;
    a -= kTwoPi * floor(a / kTwoPi + 0.5LF);
    const float af = float(a);
    const float cs = cos(af), sn = sin(af);
    const uint i0 = (p.mode & 1u) == 0u ? 2u * i : i;
    const uint i1 = (p.mode & 1u) == 0u ? 2u * i + 1u : i + half_r;
    const float x0 = x[p.o_in0 + base + i0], x1 = x[p.o_in0 + base + i1];
    o[p.o_out + base + i0] = x0 * cs - x1 * sn;
    o[p.o_out + base + i1] = x0 * sn + x1 * cs;
  }
}
