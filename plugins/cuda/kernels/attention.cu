// ATTENTION over a KV cache (GQA: query head h reads kv head h / (hq / hkv)) and KV_STORE.
//
// attention: one block of kThreads threads (4 warps of 32, or 2 wavefronts of 64) per (query
// head, query row). The query row, scaled,
// sits in shared memory. Each warp walks its share of the visible keys in chunks of one key
// per lane: the lane computes its key's score, the warp updates a running max and sum (online
// softmax), then every lane accumulates the chunk's values for its own dims (lane + c * WARP),
// each key's weight broadcast from its lane: V reads are coalesced across the warp. The warps'
// partial (max, sum, acc) are merged at the end. Keys past the visible range are never read.
#include <cmath>

#include "common.cuh"
#include "kernels.h"

namespace rlx::gpu {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / RLX_WARP;
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / RLX_WARP;

struct AttnArgs {
  int64_t hq, hkv, d, t;
  float scale;
  int causal;
  int64_t past, kv_len;
};

RLX_GLOBAL void attention_kernel(const float* q, const float* k, const float* v,
                                 const int32_t* pos, float* out, AttnArgs a) {
  __shared__ float qs[kMaxHeadDim];
  __shared__ float part_m[kWarps], part_l[kWarps];
  __shared__ float part_acc[kWarps][kMaxHeadDim];

  const int64_t h = blockIdx.x, i = blockIdx.y;
  const int64_t kvh = h / (a.hq / a.hkv);
  const int lane = threadIdx.x % RLX_WARP, warp = threadIdx.x / RLX_WARP;
  const int64_t d = a.d, kv_row = a.hkv * d;

  // Keys [0, n_vis) are visible to query row i.
  int64_t n_vis;
  if (pos) {
    n_vis = pos[i] < 0 ? 0 : (pos[i] + 1 < a.t ? pos[i] + 1 : a.t);
  } else {
    n_vis = a.kv_len ? a.kv_len : a.t;
    if (a.causal && a.past + i + 1 < n_vis) n_vis = a.past + i + 1;
  }

  const float* qr = q + (i * a.hq + h) * d;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) qs[c] = qr[c] * a.scale;
  __syncthreads();

  float m = -INFINITY, l = 0.0f, acc[kDimsPerLane];
  for (int c = 0; c < kDimsPerLane; ++c) acc[c] = 0.0f;

  const float* kb = k + kvh * d;
  const float* vb = v + kvh * d;
  for (int64_t j0 = int64_t{warp} * RLX_WARP; j0 < n_vis; j0 += int64_t{kWarps} * RLX_WARP) {
    const int64_t j = j0 + lane;
    float score = -INFINITY;
    if (j < n_vis) {
      const float* kr = kb + j * kv_row;
      float sdot = 0.0f;
      for (int64_t c = 0; c < d; ++c) sdot += qs[c] * kr[c];
      score = sdot;
    }
    const float m_new = fmaxf(m, warp_max(score));  // finite: key j0 is visible
    const float corr = expf(m - m_new);             // 0 on the first chunk
    const float p = j < n_vis ? expf(score - m_new) : 0.0f;
    l = l * corr + warp_sum(p);
    m = m_new;
    for (int c = 0; c < kDimsPerLane; ++c) acc[c] *= corr;
    const int n_keys = static_cast<int>(n_vis - j0 < RLX_WARP ? n_vis - j0 : RLX_WARP);
    for (int jj = 0; jj < n_keys; ++jj) {
      const float pj = warp_bcast(p, jj);
      const float* vr = vb + (j0 + jj) * kv_row;
      for (int c = 0; c < kDimsPerLane; ++c) {
        const int64_t dim = lane + int64_t{c} * RLX_WARP;
        if (dim < d) acc[c] += pj * vr[dim];
      }
    }
  }

  if (lane == 0) part_m[warp] = m, part_l[warp] = l;
  for (int c = 0; c < kDimsPerLane; ++c) {
    const int64_t dim = lane + int64_t{c} * RLX_WARP;
    if (dim < d) part_acc[warp][dim] = acc[c];
  }
  __syncthreads();

  float mm = -INFINITY;
  for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, part_m[w]);
  float ll = 0.0f;
  for (int w = 0; w < kWarps; ++w)
    if (part_l[w] > 0.0f) ll += part_l[w] * expf(part_m[w] - mm);
  float* o = out + (i * a.hq + h) * d;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    float y = 0.0f;
    for (int w = 0; w < kWarps; ++w)
      if (part_l[w] > 0.0f) y += part_acc[w][c] * expf(part_m[w] - mm);
    o[c] = ll > 0.0f ? y / ll : 0.0f;  // no visible key (a padding row): zeros
  }
}

// One thread per column of the row, walking the rows in order: a repeated position ends with
// the last row's values, as ops.def says. Nothing is written when any position is >= t.
RLX_GLOBAL void kv_store_kernel(float* cache, const float* x, const int32_t* pos, int64_t s,
                                int64_t row, int64_t t, ErrWord err) {
  __shared__ int bad;
  if (threadIdx.x == 0) {
    bad = 0;
    for (int64_t i = 0; i < s; ++i)
      if (pos[i] >= t) {
        bad = 1;
        if (blockIdx.x == 0 && atomicCAS(err.p, 0u, err.node + 1) == 0u)
          err.p[1] = static_cast<uint32_t>(pos[i]);
        break;
      }
  }
  __syncthreads();
  if (bad) return;
  const int64_t c = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (c >= row) return;
  for (int64_t i = 0; i < s; ++i)
    if (pos[i] >= 0) cache[pos[i] * row + c] = x[i * row + c];
}

}  // namespace

void attention(const float* q, const float* k, const float* v, const int32_t* pos, float* out,
               const AttnShape& a, cudaStream_t s) {
  if (a.s <= 0 || a.hq <= 0) return;
  const AttnArgs args{a.hq, a.hkv, a.d, a.t, a.scale, a.causal, a.past, a.kv_len};
  // grid.y is limited to 65535: longer query blocks go in chunks.
  for (int64_t r0 = 0; r0 < a.s; r0 += 65535) {
    const int64_t rows = a.s - r0 < 65535 ? a.s - r0 : 65535;
    AttnArgs chunk = args;
    chunk.past += r0;
    launch(attention_kernel, dim3(static_cast<unsigned>(a.hq), static_cast<unsigned>(rows)),
           kThreads, s, q + r0 * a.hq * a.d, k, v, pos ? pos + r0 : nullptr,
           out + r0 * a.hq * a.d, chunk);
  }
}

void kv_store(float* cache, const float* x, const int32_t* pos, int64_t s, int64_t row, int64_t t,
              ErrWord err, cudaStream_t st) {
  if (s <= 0 || row <= 0) return;
  launch(kv_store_kernel, blocks_for(row, kThreads), kThreads, st, cache, x, pos, s, row, t, err);
}

}  // namespace rlx::gpu
