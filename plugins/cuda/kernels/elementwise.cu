// add, mul, scale, silu, silu_mul: grid-stride loops, one element per thread per step.
// out may be the same storage as a (the planner runs these in place).
#include "common.cuh"
#include "kernels.h"

namespace rlx::gpu {

namespace {

constexpr int kThreads = 256;

enum class Bin { Add, Mul };

template <Bin OP>
RLX_GLOBAL void binary_kernel(const float* a, const float* b, float* out, int64_t n, int64_t nb) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float y = b[nb == n ? i : i % nb];
    out[i] = OP == Bin::Add ? a[i] + y : a[i] * y;
  }
}

RLX_GLOBAL void scale_kernel(const float* a, float* out, int64_t n, float f) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = a[i] * f;
}

RLX_DEV float silu_of(float x) { return x / (1.0f + expf(-x)); }

// up == nullptr: silu alone.
RLX_GLOBAL void silu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = up ? silu_of(gate[i]) * up[i] : silu_of(gate[i]);
}

}  // namespace

void add(const float* a, const float* b, float* out, int64_t n, int64_t nb, cudaStream_t s) {
  if (n > 0) launch(binary_kernel<Bin::Add>, blocks_for(n, kThreads), kThreads, s, a, b, out, n, nb);
}

void mul(const float* a, const float* b, float* out, int64_t n, int64_t nb, cudaStream_t s) {
  if (n > 0) launch(binary_kernel<Bin::Mul>, blocks_for(n, kThreads), kThreads, s, a, b, out, n, nb);
}

void scale(const float* a, float* out, int64_t n, float f, cudaStream_t s) {
  if (n > 0) launch(scale_kernel, blocks_for(n, kThreads), kThreads, s, a, out, n, f);
}

void silu(const float* a, float* out, int64_t n, cudaStream_t s) {
  if (n > 0)
    launch(silu_kernel, blocks_for(n, kThreads), kThreads, s, a, static_cast<const float*>(nullptr),
           out, n);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n, cudaStream_t s) {
  if (n > 0) launch(silu_kernel, blocks_for(n, kThreads), kThreads, s, gate, up, out, n);
}

}  // namespace rlx::gpu
