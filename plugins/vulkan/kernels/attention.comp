// ATTENTION: q [s, hq, d], k [t, hkv, d], v [t, hkv, d] (, pos [s]) -> out [s, hq, d].
// One workgroup (64 threads) per (query row i, head h) (grid-stride), kv head g = h / (hq/hkv):
//   keys j in [0, n): n = min(kv_len, causal ? past + i + 1 : kv_len), or with positions
//   n = min(t, pos[i] + 1) (a negative position: n = 0, a zero row)
//   out = sum_j softmax(scale * q . k_j)_j v_j
// Keys go in chunks of 64, one per thread: each thread computes its key's score, the chunk's
// max is reduced in shared memory and the running output / sum are rescaled (online softmax,
// numerically stable). Thread c accumulates output dims c, c + 64, ... (d <= 512).
// Push: n = s, nb = hq, cols = d, k = t, mode bit 0 causal, bit 1 positions (binding 5),
// f0 scale, u1 = hkv, u2 = kv_len (already resolved: 0 -> t), u3 = past.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#define WG 64
#define MAXD 512
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) buffer Q { float q[]; };
layout(std430, set = 0, binding = 1) buffer K { float kk[]; };
layout(std430, set = 0, binding = 2) buffer V { float vv[]; };
layout(std430, set = 0, binding = 3) buffer O { float o[]; };
layout(std430, set = 0, binding = 5) buffer P { int pos[]; };

shared float red[WG];
shared float pj[WG];
shared float qs[MAXD];

float reduce_max(float v) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = max(red[t], red[t + s]);
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

float reduce_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint d = p.cols, hq = p.nb, hkv = p.u1;
  const uint group = hq / hkv;
  const uint items = p.n * hq;
  for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
    const uint i = item / hq, h = item % hq, g = h / group;
    const uint qi = p.o_in0 + (i * hq + h) * d;
    const uint oi = p.o_out + (i * hq + h) * d;
    int n;
    if ((p.mode & 2u) != 0u) {
      n = min(int(p.k), pos[p.o_in3 + i] + 1);
    } else {
      n = int(p.u2);
      if ((p.mode & 1u) != 0u) n = min(n, int(p.u3 + i + 1u));
    }
    for (uint c = t; c < d; c += WG) qs[c] = q[qi + c];
    barrier();
    float acc[MAXD / WG];
    for (uint r = 0; r < MAXD / WG; ++r) acc[r] = 0.0;
    float m = -1.0 / 0.0, sum = 0.0;
    for (int j0 = 0; j0 < n; j0 += WG) {
      const int j = j0 + int(t);
      float sc = -1.0 / 0.0;
      if (j < n) {
        const uint ki = p.o_in1 + (uint(j) * hkv + g) * d;
        float dot = 0.0;
        for (uint c = 0; c < d; ++c) dot += qs[c] * kk[ki + c];
        sc = p.f0 * dot;
      }
      const float mc = reduce_max(sc);
      const float mn = max(m, mc);
      const float corr = exp(m - mn);  // m = -inf at the first chunk: exp(-inf) = 0
      const float e = j < n ? exp(sc - mn) : 0.0;
      pj[t] = e;
      const float se = reduce_sum(e);  // its barriers also publish pj
      sum = sum * corr + se;
      m = mn;
      const int cnt = min(WG, n - j0);
      for (uint r = 0; r < MAXD / WG; ++r) {
        const uint c = t + r * WG;
        if (c < d) {
          float a = acc[r] * corr;
          for (int jj = 0; jj < cnt; ++jj)
            a += pj[jj] * vv[p.o_in2 + (uint(j0 + jj) * hkv + g) * d + c];
          acc[r] = a;
        }
      }
      barrier();  // pj is rewritten by the next chunk
    }
    const float inv = n > 0 ? 1.0 / sum : 0.0;
    for (uint r = 0; r < MAXD / WG; ++r) {
      const uint c = t + r * WG;
      if (c < d) o[oi + c] = acc[r] * inv;
    }
    barrier();  // qs is rewritten by the next item
  }
}
