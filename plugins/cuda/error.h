// The cuda backend's errors: the shared plugin Error / cat / fail (plugins/common), plus
// cuda_check for runtime results, and the names this build goes by in messages.
#pragma once

#include "../common/plugin_error.h"
#include "gpu.h"

namespace rlx::gpu {

using plugin::cat;
using plugin::Error;
using plugin::fail;

// The plugin's name (--device), the runtime it drives (in messages) and its description, per
// build: cuda, rocm, and cudaemu (the kernels on the CPU emulator, for tests).
#if defined(RLX_GPU_EMU)
#define RLX_GPU_NAME "cudaemu"
#define RLX_GPU_RUNTIME "emulated CUDA"
#define RLX_GPU_DESCRIPTION "the cuda kernels on a CPU emulator (tests only; slow)"
#elif defined(RLX_GPU_HIP)
#define RLX_GPU_NAME "rocm"
#define RLX_GPU_RUNTIME "ROCm"
#define RLX_GPU_DESCRIPTION "HIP kernels for AMD GPUs: int8 GEMV decode, tiled GEMM prefill, graphs"
#else
#define RLX_GPU_NAME "cuda"
#define RLX_GPU_RUNTIME "CUDA"
#define RLX_GPU_DESCRIPTION \
  "CUDA kernels: int8 GEMV decode, tensor-core GEMM prefill, CUDA graphs for decode"
#endif

// Throws Error for a failed runtime call: allocation failures map to RLX_ERR_OUT_OF_MEMORY, the
// rest to RLX_ERR_INTERNAL. `what` names the call.
inline void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  fail(e == cudaErrorMemoryAllocation ? RLX_ERR_OUT_OF_MEMORY : RLX_ERR_INTERNAL, what,
       " failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

}  // namespace rlx::gpu
