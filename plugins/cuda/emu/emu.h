// A CPU emulation of the part of CUDA the cuda backend uses: the runtime API (memory, streams,
// graphs through stream capture) and the execution model (grids of blocks, threads as fibers,
// warps, __shared__, __syncthreads, shuffles, votes, wmma tiles). With -DRLX_GPU_EMU, gpu.h
// includes this header and the backend's .cu files build with g++ as plain C++.
//
// How a launch runs: blocks one after another on the calling OS thread (a global mutex
// serializes launches from several host threads); inside a block every CUDA thread is a fiber
// with its own stack, and a round-robin scheduler switches fibers at barriers. See README.md.
#pragma once

#include <math.h>  // fmaxf, expf, ... unqualified at global scope, as in CUDA device code

#include <cmath>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>  // before __noinline__ below: libstdc++ spells __attribute__((__noinline__))
#include <tuple>
#include <type_traits>

// ---- CUDA C++ keywords ----------------------------------------------------------------------
#define __device__
#define __host__
#define __global__
#define __constant__
#define __forceinline__
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
// One instance per block: blocks run one at a time on one OS thread, and the fibers of a block
// share function statics. Not zeroed, not preserved between blocks; no `extern __shared__`.
#define __shared__ static

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;

inline constexpr int warpSize = 32;

namespace emu {

// The running CUDA thread's coordinates; the scheduler keeps it up to date.
struct Current {
  dim3 thread_idx{0, 0, 0}, block_idx{0, 0, 0}, block_dim, grid_dim;
};
extern Current g_current;
inline Current& current() { return g_current; }

}  // namespace emu

#define threadIdx (::emu::current().thread_idx)
#define blockIdx (::emu::current().block_idx)
#define blockDim (::emu::current().block_dim)
#define gridDim (::emu::current().grid_dim)

// ---- runtime API types ----------------------------------------------------------------------
// Values are CUDA's, so logs read the same.
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
};
using cudaError = cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};

enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

inline constexpr unsigned cudaStreamDefault = 0x0;
inline constexpr unsigned cudaStreamNonBlocking = 0x1;
inline constexpr unsigned long long cudaGraphInstantiateFlagAutoFreeOnLaunch = 1;

using cudaStream_t = struct CUstream_st*;  // nullptr: the default stream
using cudaGraph_t = struct CUgraph_st*;
using cudaGraphExec_t = struct CUgraphExec_st*;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int major;
  int minor;
  int multiProcessorCount;
};

// ---- runtime API functions (emu.cpp) --------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                          unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

// ---- launches -------------------------------------------------------------------------------
namespace emu {

// Work on a stream: run now, or recorded into a graph while the stream captures.
struct Op {
  virtual ~Op() = default;
  virtual void run() const = 0;
};

// A kernel launch: configuration and the arguments, captured by value.
struct KernelOp : Op {
  dim3 grid, block;
  const char* signature;   // __PRETTY_FUNCTION__ of the launch, for messages
  const void* kernel;      // the kernel's address, for messages
  virtual void invoke() const = 0;  // calls the kernel (on the current fiber)
  void run() const override;        // runs the grid (emu.cpp)
};

template <class... P>
struct KernelOpT final : KernelOp {
  void (*fn)(P...);
  std::tuple<std::decay_t<P>...> args;
  void invoke() const override { std::apply(fn, args); }
};

// Runs op now, or records it when stream captures. Sets the last error on a bad launch.
void submit(cudaStream_t stream, std::shared_ptr<const Op> op);

template <class... P>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t stream,
            std::type_identity_t<P>... args) {
  auto op = std::make_shared<KernelOpT<P...>>();
  op->grid = grid;
  op->block = block;
  op->signature = __PRETTY_FUNCTION__;
  op->kernel = reinterpret_cast<const void*>(kernel);
  op->fn = kernel;
  op->args = std::tuple<std::decay_t<P>...>(args...);
  submit(stream, std::move(op));
}

namespace detail {
// Warp collectives of the running fiber (emu.cpp). `bits`: the lane's value; `src`: the lane to
// read (outside 0..31: the own value); returns the value of lane src.
uint64_t warp_exchange(uint64_t bits, int src, const char* file, int line);
// Ballot of pred over the warp; *live: the lanes of the warp still running.
uint32_t warp_vote(bool pred, uint32_t* live, const char* file, int line);
void warp_barrier(const char* file, int line);
void block_barrier(const char* file, int line);
int lane();
uint32_t live_mask();

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle: 8 bytes at most");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace detail
}  // namespace emu

// ---- device functions: barriers, shuffles, votes --------------------------------------------
// The mask arguments are not checked: every lane of the warp that has not exited must call
// the collective (as with a full mask). Threads that exited count as arrived.
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  emu::detail::block_barrier(file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  (void)mask;
  emu::detail::warp_barrier(file, line);
}
inline unsigned __activemask() { return emu::detail::live_mask(); }

// width (a power of two <= 32) splits the warp into segments, as in CUDA.
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  (void)mask;
  int l = emu::detail::lane();
  int s = (l & ~(width - 1)) + (src & (width - 1));
  return emu::detail::from_bits<T>(emu::detail::warp_exchange(emu::detail::to_bits(v), s, file, line));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  (void)mask;
  int l = emu::detail::lane();
  int s = l ^ lane_mask;
  if ((s & ~(width - 1)) != (l & ~(width - 1))) s = l;  // outside the segment: own value
  return emu::detail::from_bits<T>(emu::detail::warp_exchange(emu::detail::to_bits(v), s, file, line));
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                   const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  (void)mask;
  int l = emu::detail::lane();
  int s = (l & (width - 1)) + static_cast<int>(delta) < width ? l + static_cast<int>(delta) : l;
  return emu::detail::from_bits<T>(emu::detail::warp_exchange(emu::detail::to_bits(v), s, file, line));
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  (void)mask;
  int l = emu::detail::lane();
  int s = (l & (width - 1)) >= static_cast<int>(delta) ? l - static_cast<int>(delta) : l;
  return emu::detail::from_bits<T>(emu::detail::warp_exchange(emu::detail::to_bits(v), s, file, line));
}

inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  uint32_t live = 0;
  return emu::detail::warp_vote(pred != 0, &live, file, line) & mask;
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return __ballot_sync(mask, pred, file, line) != 0;
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  uint32_t live = 0;
  uint32_t b = emu::detail::warp_vote(pred != 0, &live, file, line);
  return ((b ^ live) & live & mask) == 0;
}

// ---- device functions: arithmetic -----------------------------------------------------------
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 4; ++i) c += ((a >> (8 * i)) & 0xffu) * ((b >> (8 * i)) & 0xffu);
  return c;
}

inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }

inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN: 0
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

template <class T>
T __ldg(const T* p) { return *p; }

// f16 storage. No implicit float conversions: use __half2float / __float2half.
struct __half;
constexpr __half __ushort_as_half(unsigned short bits);
constexpr unsigned short __half_as_ushort(__half h);
struct __half {
  __half() = default;

 private:
  unsigned short __x;
  friend constexpr __half __ushort_as_half(unsigned short bits);
  friend constexpr unsigned short __half_as_ushort(__half h);
};
static_assert(sizeof(__half) == 2);
constexpr __half __ushort_as_half(unsigned short bits) { __half h{}; h.__x = bits; return h; }
constexpr unsigned short __half_as_ushort(__half h) { return h.__x; }

float __half2float(__half h);        // exact
__half __float2half_rn(float f);     // round to nearest even; subnormals, inf, NaN
inline __half __float2half(float f) { return __float2half_rn(f); }

// Atomics: a launch runs on one OS thread and fibers switch only at barriers, so a plain
// read-modify-write is atomic here.
namespace emu::detail {
template <class T>
T atomic_add(T* p, T v) { T old = *p; *p = old + v; return old; }
}  // namespace emu::detail
inline int atomicAdd(int* p, int v) { return emu::detail::atomic_add(p, v); }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return emu::detail::atomic_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return emu::detail::atomic_add(p, v);
}
inline float atomicAdd(float* p, float v) { return emu::detail::atomic_add(p, v); }
inline int atomicSub(int* p, int v) { int old = *p; *p = old - v; return old; }
inline unsigned atomicSub(unsigned* p, unsigned v) { unsigned old = *p; *p = old - v; return old; }
inline int atomicCAS(int* p, int cmp, int v) { int old = *p; if (old == cmp) *p = v; return old; }
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
  unsigned old = *p;
  if (old == cmp) *p = v;
  return old;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp,
                                    unsigned long long v) {
  unsigned long long old = *p;
  if (old == cmp) *p = v;
  return old;
}
inline int atomicMax(int* p, int v) { int old = *p; if (v > old) *p = v; return old; }
inline unsigned atomicMax(unsigned* p, unsigned v) { unsigned old = *p; if (v > old) *p = v; return old; }
inline int atomicMin(int* p, int v) { int old = *p; if (v < old) *p = v; return old; }
inline unsigned atomicMin(unsigned* p, unsigned v) { unsigned old = *p; if (v < old) *p = v; return old; }
inline int atomicExch(int* p, int v) { int old = *p; *p = v; return old; }
inline unsigned atomicExch(unsigned* p, unsigned v) { unsigned old = *p; *p = v; return old; }
inline float atomicExch(float* p, float v) { float old = *p; *p = v; return old; }
inline unsigned atomicOr(unsigned* p, unsigned v) { unsigned old = *p; *p = old | v; return old; }
inline unsigned atomicAnd(unsigned* p, unsigned v) { unsigned old = *p; *p = old & v; return old; }

inline void __threadfence() { std::atomic_signal_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// ---- tensor cores: nvcuda::wmma -------------------------------------------------------------
// A fragment holds the whole tile, row-major, in every thread (x[], num_elements as in CUDA;
// elementwise loops over x[] behave as on the GPU). Each thread computes the whole product, so
// the *_sync calls need no communication; stores write the same values from every lane.
namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int M, int N, int K>
struct shape;
template <int M, int N, int K>
struct shape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K>
struct shape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K>
struct shape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

inline float to_float(float v) { return v; }
inline float to_float(__half v) { return __half2float(v); }
inline float to_float(int v) { return static_cast<float>(v); }

// Element (i, j) of a rows x cols tile at p: row-major p[i*ldm + j], col-major p[i + j*ldm].
template <class F, class T>
void load(F& f, const T* p, unsigned ldm, bool col) {
  for (int i = 0; i < F::rows; ++i)
    for (int j = 0; j < F::cols; ++j)
      f.x[i * F::cols + j] = col ? p[i + size_t(j) * ldm] : p[size_t(i) * ldm + j];
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = detail::shape<Use, M, N, K>::rows;
  static constexpr int cols = detail::shape<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];
};

template <class Use, int M, int N, int K, class T, class L>
void fill_fragment(fragment<Use, M, N, K, T, L>& f, const std::type_identity_t<T>& v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

// matrix_a / matrix_b: the layout comes from the fragment type.
template <class Use, int M, int N, int K, class T>
void load_matrix_sync(fragment<Use, M, N, K, T, row_major>& f, const T* p, unsigned ldm) {
  detail::load(f, p, ldm, false);
}
template <class Use, int M, int N, int K, class T>
void load_matrix_sync(fragment<Use, M, N, K, T, col_major>& f, const T* p, unsigned ldm) {
  detail::load(f, p, ldm, true);
}
// accumulator: the layout is an argument.
template <int M, int N, int K, class T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm,
                      layout_t layout) {
  detail::load(f, p, ldm, layout == mem_col_major);
}

template <int M, int N, int K, class T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm,
                       layout_t layout) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      T v = f.x[i * N + j];
      if (layout == mem_col_major) p[i + size_t(j) * ldm] = v;
      else p[size_t(i) * ldm + j] = v;
    }
}

// d = a * b + c, float math, k summed in order. d may be c.
template <int M, int N, int K, class TA, class LA, class TB, class LB, class TC>
void mma_sync(fragment<accumulator, M, N, K, TC>& d, const fragment<matrix_a, M, N, K, TA, LA>& a,
              const fragment<matrix_b, M, N, K, TB, LB>& b,
              const fragment<accumulator, M, N, K, TC>& c) {
  float out[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = detail::to_float(c.x[i * N + j]);
      for (int k = 0; k < K; ++k)
        s += detail::to_float(a.x[i * K + k]) * detail::to_float(b.x[k * N + j]);
      out[i * N + j] = s;
    }
  for (int i = 0; i < M * N; ++i) d.x[i] = static_cast<TC>(out[i]);
}

}  // namespace nvcuda::wmma
