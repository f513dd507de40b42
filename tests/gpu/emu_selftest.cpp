// Self-test of the GPU emulator: kernels written as the backend's are (through gpu.h), launched
// with rlx::gpu::launch, checked against plain C++. Build and run (from the repository root):
//   g++ -std=c++20 -O2 -DRLX_GPU_EMU -Iplugins/cuda -Icore/include
//       plugins/cuda/emu/emu_selftest.cpp plugins/cuda/emu/emu.cpp -o /tmp/emu_selftest
//   /tmp/emu_selftest   # exit status 0: all passed
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gpu.h"

namespace {

int g_passed = 0, g_failed = 0;

#define CHECK(cond, ...)                                            \
  do {                                                              \
    if (cond) {                                                     \
      ++g_passed;                                                   \
    } else {                                                        \
      ++g_failed;                                                   \
      std::printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                     \
      std::printf("\n");                                            \
    }                                                               \
  } while (0)

#define CUDA_OK(call) CHECK((call) == cudaSuccess, "%s", #call)

template <class T>
T* dev_alloc(size_t n) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}
template <class T>
T* upload(const std::vector<T>& v) {
  T* d = dev_alloc<T>(v.size());
  CUDA_OK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <class T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> v(n);
  CUDA_OK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace

// ---- kernels ----------------------------------------------------------------------------------

// out[block] = sum of the block's 256 values (tree reduction in shared memory); ok[block] = 1
// when a shared tag written by thread 0 is the block's own (shared memory is per block).
RLX_GLOBAL void block_sum(const float* x, float* out, int* ok, int* count) {
  __shared__ float buf[256];
  __shared__ unsigned tag;
  const unsigned t = threadIdx.x;
  if (t == 0) tag = blockIdx.x;
  buf[t] = x[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned s = 128; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
  if (tag != blockIdx.x) ok[blockIdx.x] = 0;
  atomicAdd(count, 1);
}

// Per thread (linear id i, lane l): the warp collectives' results.
struct WarpOut {
  float sum;
  int xor1, down3, bcast5, ballot, any, all, isum;
};
RLX_GLOBAL void warp_ops(WarpOut* out) {
  const int i = static_cast<int>(threadIdx.x);
  WarpOut o;
  o.sum = rlx::gpu::warp_sum(static_cast<float>(i));
  o.isum = rlx::gpu::warp_sum_int(i);
  o.xor1 = rlx::gpu::warp_xor(i, 1);
  o.down3 = __shfl_down_sync(0xffffffffu, i, 3);
  o.bcast5 = __shfl_sync(0xffffffffu, i, 5);
  o.ballot = static_cast<int>(__ballot_sync(0xffffffffu, i % 3 == 0));
  o.any = __any_sync(0xffffffffu, i == 40);
  o.all = __all_sync(0xffffffffu, i < 40);
  out[i] = o;
}

// Threads >= live exit at once; the others still meet at barriers and shuffle.
RLX_GLOBAL void early_exit(int live, float* out) {
  __shared__ float v[128];
  const int t = static_cast<int>(threadIdx.x);
  if (t >= live) return;
  v[t] = 1.0f;
  __syncthreads();
  float s = 0;
  for (int k = 0; k < live; ++k) s += v[k];
  __syncthreads();
  out[t] = s + rlx::gpu::warp_sum(1.0f) * 1000.0f;
}

RLX_GLOBAL void dp4a_kernel(const int* a, const int* b, int* out, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = rlx::gpu::dp4a(a[i], b[i], 7);
}

// Every thread records its coordinates.
RLX_GLOBAL void coords(unsigned* out) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned* o = out + 6 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
  o[0] = blockIdx.x, o[1] = blockIdx.y, o[2] = blockIdx.z;
  o[3] = threadIdx.x, o[4] = threadIdx.y, o[5] = threadIdx.z;
}

// d = a (row-major, lda 16) * b (col-major, ldb 20) + c; stored row-major and col-major.
RLX_GLOBAL void wmma_kernel(const __half* a, const __half* b, const float* c, float* d_row,
                            float* d_col) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 20);
  wmma::load_matrix_sync(acc, c, 16, wmma::mem_row_major);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(d_row, acc, 16, wmma::mem_row_major);
  wmma::store_matrix_sync(d_col, acc, 16, wmma::mem_col_major);
}

RLX_GLOBAL void affine(const float* x, float* y, int n, float a, float b) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + b;
}

// Mismatched barriers: half the warp at __syncthreads, the other half in a shuffle.
RLX_GLOBAL void mismatched(float* out) {
  float v = 1.0f;
  if (threadIdx.x < 16) __syncthreads();
  else v = rlx::gpu::warp_sum(v);
  out[threadIdx.x] = v;
}

// ---- tests ------------------------------------------------------------------------------------

static void test_block_sum() {
  const int blocks = 1000;
  std::vector<float> x(blocks * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) - 40.0f;
  float* dx = upload(x);
  float* dout = dev_alloc<float>(blocks);
  int* dok = upload(std::vector<int>(blocks, 1));
  int* dcount = upload(std::vector<int>(1, 0));
  auto t0 = std::chrono::steady_clock::now();
  rlx::gpu::launch(block_sum, blocks, 256, nullptr, dx, dout, dok, dcount);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("block_sum: %d blocks x 256 threads, 9 barriers each: %.1f ms\n", blocks, ms);
  CHECK(ms < 5000, "far too slow: %.0f ms", ms);
  auto out = download(dout, blocks);
  auto ok = download(dok, blocks);
  int bad = 0, bad_tag = 0;
  for (int b = 0; b < blocks; ++b) {
    float want = 0;
    for (int t = 0; t < 256; ++t) want += x[b * 256 + t];
    bad += out[b] != want;
    bad_tag += ok[b] != 1;
  }
  CHECK(bad == 0, "%d block sums wrong", bad);
  CHECK(bad_tag == 0, "%d blocks saw another block's shared memory", bad_tag);
  CHECK(download(dcount, 1)[0] == blocks * 256, "atomicAdd count %d", download(dcount, 1)[0]);
  cudaFree(dx), cudaFree(dout), cudaFree(dok), cudaFree(dcount);
}

static void test_warp_ops() {
  const int n = 48;  // one full warp and a partial one of 16 lanes
  WarpOut* d = dev_alloc<WarpOut>(n);
  rlx::gpu::launch(warp_ops, 1, n, nullptr, d);
  auto o = download(d, n);
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int w = i / 32 * 32, l = i % 32, lanes = std::min(32, n - w);
    int isum = 0, ballot = 0;
    for (int k = 0; k < lanes; ++k) {
      isum += w + k;
      if ((w + k) % 3 == 0) ballot |= 1 << k;
    }
    // Lanes past the block's end read as 0 in the emulator (undefined on a GPU): the partial
    // warp's sum only counts live lanes because xor partners outside read 0.
    bool ok = o[i].sum == static_cast<float>(isum) && o[i].isum == isum &&
              o[i].xor1 == (i ^ 1) && o[i].down3 == (l + 3 < 32 ? (l + 3 < lanes ? i + 3 : 0) : i) &&
              o[i].bcast5 == w + 5 && o[i].ballot == ballot && o[i].any == (w == 32) &&
              o[i].all == (w == 0);
    if (!ok) {
      if (bad < 4)
        std::printf("  thread %d: sum %g isum %d xor1 %d down3 %d bcast5 %d ballot %x any %d all %d\n",
                    i, o[i].sum, o[i].isum, o[i].xor1, o[i].down3, o[i].bcast5, o[i].ballot,
                    o[i].any, o[i].all);
      ++bad;
    }
  }
  CHECK(bad == 0, "%d threads got wrong warp results", bad);
  cudaFree(d);
}

static void test_early_exit() {
  const int live = 100;  // warp 3 keeps lanes 0..3
  float* d = upload(std::vector<float>(128, -1.0f));
  rlx::gpu::launch(early_exit, 1, 128, nullptr, live, d);
  auto o = download(d, 128);
  int bad = 0;
  for (int t = 0; t < 128; ++t) {
    float lanes = t < 96 ? 32.0f : 4.0f;
    float want = t < live ? static_cast<float>(live) + lanes * 1000.0f : -1.0f;
    bad += o[t] != want;
  }
  CHECK(bad == 0, "%d threads wrong after early exits", bad);
  cudaFree(d);
}

static void test_dp4a() {
  std::vector<int> a, b, want;
  uint32_t s = 12345;
  for (int i = 0; i < 300; ++i) {
    s = s * 1664525u + 1013904223u;
    int x = static_cast<int>(s);
    s = s * 1664525u + 1013904223u;
    int y = static_cast<int>(s);
    a.push_back(x), b.push_back(y);
    int r = 7;
    for (int k = 0; k < 4; ++k) r += int8_t(x >> (8 * k)) * int8_t(y >> (8 * k));
    want.push_back(r);
  }
  a[0] = int(0x80808080u), b[0] = int(0x80808080u), want[0] = 7 + 4 * 128 * 128;
  a[1] = int(0x7f80ff01u), b[1] = int(0xff7f0180u), want[1] = 7 + (127 * -1 + -128 * 127 + -1 * 1 + 1 * -128);
  int *da = upload(a), *db = upload(b), *dout = dev_alloc<int>(a.size());
  rlx::gpu::launch(dp4a_kernel, 3, 128, nullptr, da, db, dout, static_cast<int>(a.size()));
  CHECK(download(dout, a.size()) == want, "dp4a results differ");
  cudaFree(da), cudaFree(db), cudaFree(dout);
}

static uint16_t f2h(float f) { return __half_as_ushort(__float2half(f)); }

static void test_half() {
  // Every half converts to float and back unchanged (NaN stays NaN).
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = rlx::gpu::half_to_float(static_cast<uint16_t>(h));
    bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan ? !std::isnan(f) || (f2h(f) & 0x7fff) <= 0x7c00 : f2h(f) != h) ++bad;
  }
  CHECK(bad == 0, "%d halves do not round-trip", bad);
  // Rounding: between neighbours a < b the midpoint goes to the even one, anything off the
  // midpoint to the nearer one; subnormals included.
  bad = 0;
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    double a = rlx::gpu::half_to_float(uint16_t(h)), b = rlx::gpu::half_to_float(uint16_t(h + 1));
    float mid = static_cast<float>((a + b) / 2);
    uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    bad += f2h(mid) != even;
    bad += f2h(std::nextafter(mid, 0.0f)) != h;
    bad += f2h(std::nextafter(mid, INFINITY)) != h + 1;
    bad += f2h(-mid) != (even | 0x8000);
  }
  CHECK(bad == 0, "%d rounding cases wrong", bad);
  CHECK(f2h(1.0f) == 0x3c00, "1.0 -> %04x", f2h(1.0f));
  CHECK(f2h(1.0f + 0x1p-11f) == 0x3c00, "tie to even (down) -> %04x", f2h(1.0f + 0x1p-11f));
  CHECK(f2h(1.0f + 3 * 0x1p-11f) == 0x3c02, "tie to even (up) -> %04x", f2h(1.0f + 3 * 0x1p-11f));
  CHECK(f2h(65504.0f) == 0x7bff && f2h(65519.0f) == 0x7bff, "max half");
  CHECK(f2h(65520.0f) == 0x7c00 && f2h(1e30f) == 0x7c00 && f2h(-INFINITY) == 0xfc00, "overflow");
  CHECK(f2h(0x1p-24f) == 0x0001 && f2h(0x1p-25f) == 0 && f2h(1.5f * 0x1p-24f) == 0x0002,
        "smallest subnormals: %04x %04x %04x", f2h(0x1p-24f), f2h(0x1p-25f), f2h(1.5f * 0x1p-24f));
  CHECK(f2h(0x1p-14f - 0x1p-30f) == 0x0400, "rounds up into the smallest normal");
  CHECK(f2h(-0.0f) == 0x8000 && f2h(1e-30f) == 0, "signed zero, underflow");
  CHECK((f2h(NAN) & 0x7e00) == 0x7e00, "NaN -> %04x", f2h(NAN));
  CHECK(rlx::gpu::half_to_float(0x0001) == 0x1p-24f && rlx::gpu::half_to_float(0xc000) == -2.0f,
        "half_to_float");
  CHECK(rlx::gpu::bf16_to_float(0x3f80) == 1.0f, "bf16");
}

static void test_wmma() {
  std::vector<float> af(256), bf(16 * 20), c(256);
  std::vector<__half> a(256), b(16 * 20);
  for (int i = 0; i < 256; ++i) af[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  for (int i = 0; i < 16 * 20; ++i) bf[i] = static_cast<float>((i * 5) % 13) * 0.25f - 1.0f;
  for (int i = 0; i < 256; ++i) c[i] = static_cast<float>(i % 5);
  for (int i = 0; i < 256; ++i) a[i] = __float2half(af[i]);
  for (int i = 0; i < 16 * 20; ++i) b[i] = __float2half(bf[i]);
  __half *da = upload(a), *db = upload(b);
  float *dc = upload(c), *drow = dev_alloc<float>(256), *dcol = dev_alloc<float>(256);
  rlx::gpu::launch(wmma_kernel, 1, 32, nullptr, da, db, dc, drow, dcol);
  auto row = download(drow, 256), col = download(dcol, 256);
  int bad = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float s = c[i * 16 + j];
      for (int k = 0; k < 16; ++k) s += af[i * 16 + k] * bf[k + j * 20];  // b col-major, ldb 20
      bad += row[i * 16 + j] != s || col[i + j * 16] != s;
    }
  CHECK(bad == 0, "%d wmma elements differ from the naive product", bad);
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(drow), cudaFree(dcol);
}

static void test_coords() {
  dim3 grid(3, 2, 2), block(4, 3, 2);
  const unsigned n = 12 * 24;
  unsigned* d = dev_alloc<unsigned>(6 * n);
  rlx::gpu::launch(coords, grid, block, nullptr, d);
  auto o = download(d, 6 * n);
  int bad = 0;
  unsigned k = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, k += 6)
              bad += o[k] != bx || o[k + 1] != by || o[k + 2] != bz || o[k + 3] != tx ||
                     o[k + 4] != ty || o[k + 5] != tz;
  CHECK(bad == 0, "%d threads saw wrong indices", bad);
  cudaFree(d);
}

static void test_graph() {
  const int n = 1000;
  cudaStream_t s = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* host_in = nullptr;
  CUDA_OK(cudaMallocHost(reinterpret_cast<void**>(&host_in), n * sizeof(float)));
  std::vector<float> host_out(n, -7.0f);
  float *dx = dev_alloc<float>(n), *dy = dev_alloc<float>(n);
  for (int i = 0; i < n; ++i) host_in[i] = static_cast<float>(i);

  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  cudaStreamCaptureStatus st{};
  CUDA_OK(cudaStreamIsCapturing(s, &st));
  CHECK(st == cudaStreamCaptureStatusActive, "not capturing");
  CUDA_OK(cudaMemcpyAsync(dx, host_in, n * sizeof(float), cudaMemcpyHostToDevice, s));
  CUDA_OK(cudaMemsetAsync(dy, 0, n * sizeof(float), s));
  rlx::gpu::launch(affine, (n + 255) / 256, 256, s, dx, dy, n, 2.0f, 1.0f);
  CUDA_OK(cudaMemcpyAsync(host_out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  cudaGraph_t g = nullptr;
  CUDA_OK(cudaStreamEndCapture(s, &g));
  CHECK(host_out[0] == -7.0f, "captured work ran at capture time");
  CUDA_OK(cudaGetLastError());
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaGraphInstantiateWithFlags(&exec, g, 0));
  for (int rep = 0; rep < 2; ++rep) {
    for (int i = 0; i < n; ++i) host_in[i] = static_cast<float>(i * (rep + 1));
    CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaStreamSynchronize(s));
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += host_out[i] != 2.0f * static_cast<float>(i * (rep + 1)) + 1.0f;
    CHECK(bad == 0, "replay %d: %d values wrong", rep, bad);
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(g));
  // Synchronizing a capturing stream fails and invalidates the capture, as in CUDA.
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported, "sync while capturing");
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated && g == nullptr,
        "capture not invalidated");
  cudaGetLastError();
  CUDA_OK(cudaStreamDestroy(s));
  CUDA_OK(cudaFreeHost(host_in));
  cudaFree(dx), cudaFree(dy);
}

static void test_runtime() {
  int count = 0, dev = -1, ver = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  CHECK(count == 1, "device count %d", count);
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaGetDevice(&dev));
  CUDA_OK(cudaRuntimeGetVersion(&ver));
  cudaDeviceProp p{};
  CUDA_OK(cudaGetDeviceProperties(&p, 0));
  CHECK(p.warpSize == 32 && p.major == 9 && p.multiProcessorCount == 4 &&
            std::string(p.name) == "rlx GPU emulator (CPU)",
        "properties");
  CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice, "device 1");
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice && cudaGetLastError() == cudaSuccess,
        "last error is reset by cudaGetLastError");
  size_t free0 = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free0, &total));
  float* d = dev_alloc<float>(1000);
  CHECK(reinterpret_cast<uintptr_t>(d) % 256 == 0, "alignment");
  CHECK(std::isnan(download(d, 1000)[999]), "fresh device memory is NaN");
  float host[4] = {};
  CHECK(cudaMemcpy(host, host, 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "copy to a host pointer as device");
  CHECK(cudaMemcpy(d + 998, host, 16, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
        "copy past the end of an allocation");
  CUDA_OK(cudaMemset(d, 0, 4000));
  CHECK(download(d, 1000)[999] == 0.0f, "memset");
  CHECK(cudaFree(host) == cudaErrorInvalidValue, "free of an unknown pointer");
  CUDA_OK(cudaFree(d));
  CUDA_OK(cudaFree(nullptr));
  cudaGetLastError();
  rlx::gpu::launch(affine, 1, 2048, nullptr, d, d, 0, 1.0f, 0.0f);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "2048 threads per block");
  CHECK(std::string(cudaGetErrorName(cudaErrorMemoryAllocation)) == "cudaErrorMemoryAllocation",
        "error name");
}

// Two host threads launching at once: launches are serialized.
static void test_threads() {
  const int n = 4096;
  float *x = upload(std::vector<float>(n, 1.0f)), *y1 = dev_alloc<float>(n), *y2 = dev_alloc<float>(n);
  auto work = [&](float* y, float a) {
    for (int r = 0; r < 20; ++r) rlx::gpu::launch(affine, n / 128, 128, nullptr, x, y, n, a, 0.0f);
  };
  std::thread t1(work, y1, 2.0f), t2(work, y2, 3.0f);
  t1.join(), t2.join();
  CHECK(download(y1, n)[n - 1] == 2.0f && download(y2, n)[0] == 3.0f, "concurrent launches");
  cudaFree(x), cudaFree(y1), cudaFree(y2);
}

// The mismatched kernel must abort with the deadlock message (in a child process).
static void test_deadlock() {
  int fds[2];
  if (pipe(fds) != 0) {
    CHECK(false, "pipe");
    return;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    float* d = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&d), 32 * sizeof(float));
    rlx::gpu::launch(mismatched, 1, 32, nullptr, d);
    _exit(0);  // not reached
  }
  close(fds[1]);
  std::string err;
  char buf[512];
  for (ssize_t r; (r = read(fds[0], buf, sizeof buf)) > 0;) err.append(buf, size_t(r));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "child did not abort (status %d)", status);
  CHECK(err.find("deadlock in kernel launch") != std::string::npos &&
            err.find("__syncthreads at") != std::string::npos &&
            err.find("warp collective at") != std::string::npos,
        "message: %s", err.c_str());
}

int main() {
  test_runtime();
  test_block_sum();
  test_warp_ops();
  test_early_exit();
  test_dp4a();
  test_half();
  test_wmma();
  test_coords();
  test_graph();
  test_threads();
  test_deadlock();
  if (g_failed) {
    std::printf("emu selftest: %d of %d checks FAILED\n", g_failed, g_failed + g_passed);
    return 1;
  }
  std::printf("emu selftest: %d checks passed\n", g_passed);
  return 0;
}
