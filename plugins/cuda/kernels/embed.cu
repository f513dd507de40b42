// EMBED: out [s, d] = table [v, d] rows ids [s]; the table f32, f16, bf16 or a GGUF block type
// (rows of row_bytes(dtype, d) bytes), dequantized with quant.cuh (bit-identical with the host's
// rlx::quant). One block of 256 threads per id; an id outside [0, v) writes a zero row and
// records the error (the first one wins: p[0] = node + 1, p[1] = the id).
#include <cstdint>

#include "kernels.h"
#include "quant.cuh"
#include "rlx/quant.h"

namespace rlx::gpu {
namespace {

constexpr int kEmbedThreads = 256;

template <uint32_t DT>
RLX_GLOBAL void embed_rows(const uint8_t* table, int64_t rb, const int32_t* ids, float* out,
                           int64_t v, int d, ErrWord err) {
  using T = q::W<DT>;
  const int64_t i = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int32_t id = ids[i];
  float* o = out + i * d;
  if (id < 0 || id >= v) {
    for (int e = tid; e < d; e += nt) o[e] = 0.0f;
    if (tid == 0 && atomicCAS(err.p, 0u, err.node + 1u) == 0u) err.p[1] = static_cast<uint32_t>(id);
    return;
  }
  const uint8_t* row = table + static_cast<int64_t>(id) * rb;
  if constexpr (T::kBlock > 1) {
    for (int u = tid; u < d / 8; u += nt) {
      float y[8];
      T::deq8(row, 8 * u, y);
      for (int j = 0; j < 8; ++j) o[8 * u + j] = y[j];
    }
  } else {
    for (int e = tid; e < d; e += nt) o[e] = T::at(row, e);
  }
}

template <uint32_t DT>
void run(const void* table, const int32_t* ids, float* out, int64_t s, int64_t v, int64_t d,
         ErrWord err, cudaStream_t st) {
  const int64_t rb = rlx::quant::row_bytes(static_cast<rlx_dtype>(DT), d);
  if (rb < 0) return;
  launch(embed_rows<DT>, dim3(static_cast<unsigned>(s)), dim3(kEmbedThreads), st,
         static_cast<const uint8_t*>(table), rb, ids, out, v, static_cast<int>(d), err);
}

}  // namespace

void embed(const void* table, uint32_t dtype, const int32_t* ids, float* out, int64_t s, int64_t v,
           int64_t d, ErrWord err, cudaStream_t st) {
  if (s <= 0 || d <= 0) return;
  switch (dtype) {
    case RLX_F32: run<RLX_F32>(table, ids, out, s, v, d, err, st); break;
    case RLX_F16: run<RLX_F16>(table, ids, out, s, v, d, err, st); break;
    case RLX_BF16: run<RLX_BF16>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q4_0: run<RLX_Q4_0>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q4_1: run<RLX_Q4_1>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q5_0: run<RLX_Q5_0>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q5_1: run<RLX_Q5_1>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q8_0: run<RLX_Q8_0>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q2_K: run<RLX_Q2_K>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q3_K: run<RLX_Q3_K>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q4_K: run<RLX_Q4_K>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q5_K: run<RLX_Q5_K>(table, ids, out, s, v, d, err, st); break;
    case RLX_Q6_K: run<RLX_Q6_K>(table, ids, out, s, v, d, err, st); break;
    default: break;
  }
}

}  // namespace rlx::gpu
