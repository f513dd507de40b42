// KV_STORE: cache[pos[i]] = x[i] for each row i of x, in place (the output is the cache).
// A negative position is a padding row (nothing stored); a repeated position keeps the last
// row; a position >= t is a run-time error that must leave the cache as it was. So every
// workgroup first scans all s positions: if any is out of range nothing is written anywhere
// (and the first bad one is recorded in the error word); a row also skips itself when a later
// row has the same position. s is small (a prompt chunk), so the O(s) scan is cheap.
// Push: n = s rows of x, nb = t rows of the cache, cols = h * d (a row).
// Bindings: 0 the cache (not read), 1 x, 2 pos, 3 the cache (written), 4 the error word.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 256
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 1) buffer X { float x[]; };
layout(std430, set = 0, binding = 2) buffer P { int pos[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };
layout(std430, set = 0, binding = 4) buffer E { uint err[]; };  // [node + 1, bad position]

shared uint bad;      // the first row with pos >= t, or 0xffffffff
shared uint later;    // a later row has this row's position

void main() {
  const uint t = gl_LocalInvocationID.x;
  if (t == 0u) bad = 0xffffffffu;
  barrier();
  for (uint j = t; j < p.n; j += WG)
    if (pos[p.o_in2 + j] >= int(p.nb)) atomicMin(bad, j);
  barrier();
  if (bad != 0xffffffffu) {  // uniform: every invocation read the same shared value
    if (gl_WorkGroupID.x == 0u && t == 0u)
      if (atomicCompSwap(err[0], 0u, p.node + 1u) == 0u) err[1] = uint(pos[p.o_in2 + bad]);
    return;
  }
  for (uint i = gl_WorkGroupID.x; i < p.n; i += gl_NumWorkGroups.x) {
    const int ps = pos[p.o_in2 + i];
    if (t == 0u) later = 0u;
    barrier();
    for (uint j = i + 1u + t; j < p.n; j += WG)
      if (pos[p.o_in2 + j] == ps) later = 1u;
    barrier();
    const bool store = ps >= 0 && later == 0u;
    barrier();
    if (store)
      for (uint c = t; c < p.cols; c += WG)
        o[p.o_out + uint(ps) * p.cols + c] = x[p.o_in1 + i * p.cols + c];
  }
}
