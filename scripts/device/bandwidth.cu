// Device memory bandwidth, the roofline for decode (every weight byte is read once per token).
//
//   nvcc -O3 -arch=sm_90 -o bandwidth scripts/device/bandwidth.cu && ./bandwidth [--gib N] [--reps R]
//
// Measures, on one buffer of N GiB (default 4; several times the L2):
//   copy   cudaMemcpyAsync device-to-device of N/2 GiB: copy_gbs counts bytes read + written,
//          copy_read_gbs the bytes read alone (what a read-only stream would move in that time)
//   read   a streaming kernel: 16-byte (uint4) loads, several in flight per thread, a grid-stride
//          loop over the whole buffer and a sum reduction that is checked (so nothing is
//          optimized away); a few launch shapes are tried and the fastest is read_gbs
//   write  a streaming store kernel over the whole buffer (write_gbs), for reference
// Each figure is the median of --reps timed runs (CUDA events) after two warm-ups. The output is
// one `bandwidth.<key>=<value>` line per figure (GB = 1e9 bytes), for scripts/device-check.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "bandwidth: %s failed: %s (%s)\n", #call, cudaGetErrorName(e_), \
                   cudaGetErrorString(e_));                                              \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

static __device__ __forceinline__ uint32_t sum4(uint4 v) { return v.x + v.y + v.z + v.w; }

// Sum of every 32-bit word of p[0, n) (mod 2^32) into *out (atomicAdd of one value per block).
template <int UNROLL>
__global__ void __launch_bounds__(256) read_kernel(const uint4* __restrict__ p, size_t n,
                                                   unsigned int* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint32_t acc = 0;
  for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
    uint4 v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) v[k] = __ldcs(p + i + k * stride);
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) acc += sum4(v[k]);
  }
  for (; i < n; i += stride) acc += sum4(__ldcs(p + i));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  __shared__ uint32_t warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t s = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x + 31) / 32; ++w) s += warp_sums[w];
    atomicAdd(out, s);
  }
}

__global__ void __launch_bounds__(256) write_kernel(uint4* __restrict__ p, size_t n, uint32_t v) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uint4 x = make_uint4(v, v, v, v);
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    __stcs(p + i, x);
}

// Median seconds of `reps` runs of fn (after two warm-ups), timed with CUDA events.
static double time_median(int reps, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int w = 0; w < 2; ++w) fn();
  CK(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a));
    fn();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e-3);
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  double gib = 4;
  int reps = 10;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gib") && i + 1 < argc) {
      gib = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--gib N (default 4)] [--reps R (default 10)]\n", argv[0]);
      return 2;
    }
  }
  int dev = 0, sms = 0, l2 = 0, mem_khz = 0, bus_bits = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  // Not every driver reports these (0 then): the datasheet peak is only a lead anyway.
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess) mem_khz = 0;
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess) bus_bits = 0;
  cudaGetLastError();
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));

  size_t bytes = static_cast<size_t>(gib * (1ull << 30));
  bytes = std::min(bytes, free_b / 2);
  bytes &= ~static_cast<size_t>((1u << 20) - 1);  // whole MiB: a multiple of 16 and even halves
  const size_t n16 = bytes / 16;

  std::printf("bandwidth.device=%s\n", prop.name);
  std::printf("bandwidth.cc=%d.%d\n", prop.major, prop.minor);
  std::printf("bandwidth.sms=%d\n", sms);
  std::printf("bandwidth.l2_mib=%.1f\n", l2 / 1048576.0);
  std::printf("bandwidth.mem_gib=%.1f\n", total_b / 1073741824.0);
  // DDR: two transfers per clock.
  if (mem_khz > 0 && bus_bits > 0)
    std::printf("bandwidth.peak_gbs=%.0f\n", 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9);
  std::printf("bandwidth.buffer_gib=%.2f\n", bytes / 1073741824.0);
  std::printf("bandwidth.reps=%d\n", reps);
  std::fflush(stdout);

  uint8_t* buf = nullptr;
  unsigned int* sum = nullptr;
  CK(cudaMalloc(&buf, bytes));
  CK(cudaMalloc(&sum, sizeof(unsigned int)));
  const uint8_t fill = 0x01;
  CK(cudaMemset(buf, fill, bytes));
  CK(cudaDeviceSynchronize());

  // copy: half the buffer onto the other half.
  const size_t half = bytes / 2;
  double t = time_median(reps, [&] { CK(cudaMemcpyAsync(buf + half, buf, half, cudaMemcpyDeviceToDevice)); });
  std::printf("bandwidth.copy_gbs=%.1f\n", 2.0 * half / t / 1e9);
  std::printf("bandwidth.copy_read_gbs=%.1f\n", 1.0 * half / t / 1e9);
  std::fflush(stdout);

  // read: a few shapes, the fastest wins.
  struct Shape { int blocks_per_sm, unroll; };
  const Shape shapes[] = {{4, 4}, {8, 4}, {16, 4}, {4, 8}, {8, 8}, {32, 2}};
  double best = 0;
  Shape best_s{0, 0};
  bool sums_ok = true;
  const uint64_t words = bytes / 4;
  const uint32_t expect = static_cast<uint32_t>(words * 0x01010101ull);
  for (const Shape& s : shapes) {
    const int blocks = s.blocks_per_sm * sms;
    auto launch = [&] {
      CK(cudaMemsetAsync(sum, 0, sizeof(unsigned int)));
      const uint4* p = reinterpret_cast<const uint4*>(buf);
      switch (s.unroll) {
        case 2: read_kernel<2><<<blocks, 256>>>(p, n16, sum); break;
        case 4: read_kernel<4><<<blocks, 256>>>(p, n16, sum); break;
        default: read_kernel<8><<<blocks, 256>>>(p, n16, sum); break;
      }
    };
    double ts = time_median(reps, launch);
    unsigned int got = 0;
    CK(cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost));
    if (got != expect) sums_ok = false;
    const double gbs = bytes / ts / 1e9;
    std::printf("bandwidth.read_gbs.%dx256.u%d=%.1f\n", s.blocks_per_sm * sms, s.unroll, gbs);
    if (gbs > best) { best = gbs; best_s = s; }
  }
  std::printf("bandwidth.read_gbs=%.1f\n", best);
  std::printf("bandwidth.read_shape=%d blocks x 256 threads, %d x 16 B loads in flight\n",
              best_s.blocks_per_sm * sms, best_s.unroll);
  std::printf("bandwidth.read_check=%s\n", sums_ok ? "ok" : "WRONG SUM");
  std::fflush(stdout);

  // write
  t = time_median(reps, [&] { write_kernel<<<8 * sms, 256>>>(reinterpret_cast<uint4*>(buf), n16, 7u); });
  std::printf("bandwidth.write_gbs=%.1f\n", bytes / t / 1e9);

  CK(cudaFree(sum));
  CK(cudaFree(buf));
  return sums_ok ? 0 : 1;
}
