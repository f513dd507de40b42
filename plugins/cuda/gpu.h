// The portability header: the cuda backend's sources (host and kernels) are written against the
// CUDA runtime API and CUDA C++, and this header makes the same text build three ways:
//
//   nvcc   (CUDA)           the real thing: cuda_runtime.h, cuda_fp16.h, mma.h (tensor cores)
//   hipcc  (RLX_GPU_HIP)    cuda* names -> hip*, warp size 64 or 32 per target, no tensor cores
//   g++    (RLX_GPU_EMU)    emu/emu.h: a CPU emulation of the runtime and of the execution model
//                           (blocks, warps, shared memory, barriers, shuffles), so the kernels are
//                           tested here in CI without a GPU
//
// Kernels use only what is listed here: RLX_DEV / RLX_GLOBAL, RLX_WARP (device code), warp_xor
// (a shuffle), dp4a, half_to_float / float_to_half, f16 storage as __half, and RLX_GPU_WMMA for
// the tensor-core path. Host files include this header too; kernel launches happen only in
// kernels/*.cu, through rlx::gpu::launch.
#pragma once

#include <cstdint>

#if defined(RLX_GPU_EMU)

#include "emu/emu.h"
#define RLX_GPU_WMMA 1  // the emulator implements nvcuda::wmma (whole tiles per thread)

#elif defined(RLX_GPU_HIP)

#if defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#else  // host files built by the C++ compiler: the runtime API only
#include <hip/hip_runtime_api.h>
#endif

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceProp hipDeviceProp_t
#define cudaSetDevice hipSetDevice
#define cudaMemGetInfo hipMemGetInfo
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocHost hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStream_t hipStream_t
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy

#else  // CUDA

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if defined(__CUDACC__)
#include <mma.h>
#endif
// Tensor cores (wmma, f16 inputs, f32 accumulation) from Volta on; the host pass sees the
// macro too, which only matters for code inside kernels.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
#define RLX_GPU_WMMA 1
#endif

#endif

#if defined(RLX_GPU_EMU)
#define RLX_DEV inline
#define RLX_GLOBAL
#else
#define RLX_DEV __device__ __forceinline__
#define RLX_GLOBAL __global__
#endif

// The warp (wavefront) width kernels are compiled for. Host code asks the device instead
// (Device::warp()): a HIP build holds wave64 (gfx90a) and wave32 (gfx1030) code objects.
#if defined(RLX_GPU_HIP)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define RLX_WARP __AMDGCN_WAVEFRONT_SIZE
#else
#define RLX_WARP 64  // the host pass: not used for launches
#endif
#else
#define RLX_WARP 32
#endif

// Device helpers, for the files a device compiler (or the emulator) builds.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(RLX_GPU_EMU)
namespace rlx::gpu {

// Value of lane (lane ^ mask) in the same warp; every lane of the warp must call it.
template <class T>
RLX_DEV T warp_xor(T v, int mask) {
#if defined(RLX_GPU_HIP)
  return __shfl_xor(v, mask);
#else
  return __shfl_xor_sync(0xffffffffu, v, mask);
#endif
}

// Value of lane `src` of the same warp; every lane of the warp must call it.
template <class T>
RLX_DEV T warp_bcast(T v, int src) {
#if defined(RLX_GPU_HIP)
  return __shfl(v, src);
#else
  return __shfl_sync(0xffffffffu, v, src);
#endif
}

// Sum (max) over the warp; every lane gets the result.
RLX_DEV float warp_sum(float v) {
  for (int m = RLX_WARP / 2; m > 0; m >>= 1) v += warp_xor(v, m);
  return v;
}
RLX_DEV float warp_max(float v) {
  for (int m = RLX_WARP / 2; m > 0; m >>= 1) v = fmaxf(v, warp_xor(v, m));
  return v;
}
RLX_DEV int warp_sum_int(int v) {
  for (int m = RLX_WARP / 2; m > 0; m >>= 1) v += warp_xor(v, m);
  return v;
}

// c + dot of the four signed bytes of a and b.
RLX_DEV int dp4a(int a, int b, int c) {
#if defined(RLX_GPU_HIP) && (defined(__gfx906__) || defined(__gfx908__) || defined(__gfx90a__) || \
                             defined(__gfx1030__))
  return __builtin_amdgcn_sdot4(a, b, c, false);
#elif defined(RLX_GPU_HIP)
  for (int i = 0; i < 4; ++i)
    c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
#else
  return __dp4a(a, b, c);
#endif
}

RLX_DEV float half_to_float(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }
RLX_DEV __half float_to_half(float f) { return __float2half(f); }
RLX_DEV float bf16_to_float(uint16_t bits) { return __uint_as_float(uint32_t{bits} << 16); }

}  // namespace rlx::gpu
#endif

// kernel<<<grid, block, 0, stream>>>(args...), in kernels/*.cu only. Arguments convert to the
// kernel's parameter types here, so a launch site reads like a call.
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(RLX_GPU_EMU)
namespace rlx::gpu {
template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t stream, A... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: argument count differs from the kernel's");
#if defined(RLX_GPU_EMU)
  emu::launch(kernel, grid, block, stream, static_cast<P>(args)...);
#else
  kernel<<<grid, block, 0, stream>>>(static_cast<P>(args)...);
#endif
}
}  // namespace rlx::gpu
#endif
