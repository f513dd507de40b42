// The cuda backend's matmul and embed kernels against host references, built with g++
// -DRLX_GPU_EMU and run on the CPU emulator (plugins/cuda/emu). Standalone: exits nonzero on a
// failure.
//
//   g++ -std=c++20 -O2 -DRLX_GPU_EMU -x c++ -Iplugins/cuda -Icore/include
//       plugins/cuda/kernels/matmul.cu plugins/cuda/kernels/embed.cu
//       -x none tests/gpu/test_matmul_emu.cpp plugins/cuda/emu/emu.cpp -o test_matmul_emu
//
// matmul: every supported weight type, m in {1, 3, 8, 9, 70}, n in {1, 33, 96}, k per type,
// tensor_cores and int8_act each on and off, against a double-precision product with the
// weights dequantized by rlx::quant::dequantize_row. Tolerances (relative RMS error): exact
// paths 1e-5, int8 activations 2e-2, the f16 tensor-core path 5e-3.
// embed: every supported type, bit-exact rows, zero rows and the error word for bad ids.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gpu.h"
#include "kernels/kernels.h"
#include "rlx/quant.h"

namespace {

int g_failures = 0;

#define CHECK_CUDA(expr)                                                              \
  do {                                                                                \
    const cudaError_t e_ = (expr);                                                    \
    if (e_ != cudaSuccess) {                                                          \
      std::printf("FAIL %s:%d: %s -> %s\n", __FILE__, __LINE__, #expr,               \
                  cudaGetErrorString(e_));                                            \
      ++g_failures;                                                                   \
    }                                                                                 \
  } while (0)

struct TypeInfo {
  rlx_dtype t;
  const char* name;
  std::vector<int64_t> ks;
};

const std::vector<TypeInfo>& types() {
  static const std::vector<TypeInfo> v = {
      {RLX_F32, "f32", {33, 40, 64, 96}},   {RLX_F16, "f16", {40, 64, 96}},
      {RLX_BF16, "bf16", {40, 64, 96}},     {RLX_Q4_0, "q4_0", {32, 256, 512}},
      {RLX_Q4_1, "q4_1", {32, 256, 512}},   {RLX_Q5_0, "q5_0", {32, 256, 512}},
      {RLX_Q5_1, "q5_1", {32, 256, 512}},   {RLX_Q8_0, "q8_0", {32, 256, 512}},
      {RLX_Q2_K, "q2_k", {256, 512}},       {RLX_Q3_K, "q3_k", {256, 512}},
      {RLX_Q4_K, "q4_k", {256, 512}},       {RLX_Q5_K, "q5_k", {256, 512}},
      {RLX_Q6_K, "q6_k", {256, 512}},
  };
  return v;
}

std::vector<float> random_floats(std::mt19937& rng, size_t n, float scale) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& f : v) f = u(rng) * scale;
  return v;
}

// Weights: n rows of k, quantized row by row; `deq` gets the dequantized values.
std::vector<uint8_t> make_weights(std::mt19937& rng, rlx_dtype t, int64_t n, int64_t k,
                                  std::vector<float>& deq) {
  const int64_t rb = rlx::quant::row_bytes(t, k);
  std::vector<uint8_t> w(static_cast<size_t>(rb * n));
  deq.assign(static_cast<size_t>(n * k), 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    // Rows of different magnitudes and an offset, so mins and scales vary.
    std::vector<float> src = random_floats(rng, static_cast<size_t>(k), 0.5f + 0.1f * (j % 7));
    for (auto& f : src) f += 0.05f * static_cast<float>(j % 3);
    if (!rlx::quant::quantize_row(t, src.data(), w.data() + j * rb, k) ||
        !rlx::quant::dequantize_row(t, w.data() + j * rb, deq.data() + j * k, k)) {
      std::printf("FAIL quantize/dequantize row (dtype %d, k %lld)\n", static_cast<int>(t),
                  static_cast<long long>(k));
      ++g_failures;
    }
  }
  return w;
}

template <class T>
T* to_device(const std::vector<T>& h) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(h.size() * sizeof(T), 1)));
  if (!h.empty())
    CHECK_CUDA(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}

bool is_block(rlx_dtype t) { return rlx::quant::block_elems(t) > 1; }

// x through the int8 activation blocks (the cpu qdot's rounding): d = amax / 127, q = nearest
// (ties to even) of x * (1 / d); the values d * q. Empty when k is not a multiple of 32.
std::vector<float> int8_roundtrip(const std::vector<float>& x, int64_t k) {
  if (k % 32 != 0) return {};
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t e = b; e < b + 32; ++e) amax = std::max(amax, std::fabs(x[e]));
    const float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
    for (size_t e = b; e < b + 32; ++e) out[e] = d * std::nearbyint(x[e] * id);
  }
  return out;
}

// Expected path and its tolerance.
double tolerance(rlx_dtype t, int64_t m, const rlx::gpu::Caps& caps, const char** path) {
  if (m <= 8) {
    if (caps.int8_act && is_block(t)) {
      *path = "gemv-int8";
      return 2e-2;
    }
    *path = "gemv-f32";
    return 1e-5;
  }
  if (caps.tensor_cores && t != RLX_F32) {
    *path = "gemm-wmma";
    return 5e-3;
  }
  *path = "gemm-simt";
  return 1e-5;
}

struct Worst {
  double err = 0;
  int runs = 0;
};

void test_matmul() {
  std::mt19937 rng(1234);
  const int64_t ms[] = {1, 3, 8, 9, 70};
  const int64_t ns[] = {1, 33, 96};
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const TypeInfo& ti : types()) {
    if (!rlx::gpu::weight_supported(ti.t)) {
      std::printf("FAIL weight_supported(%s) (matmul) is false\n", ti.name);
      ++g_failures;
      continue;
    }
    Worst worst[4];  // gemv-f32, gemv-int8, gemm-simt, gemm-wmma
    const char* names[4] = {"gemv-f32", "gemv-int8", "gemm-simt", "gemm-wmma"};
    for (int64_t k : ti.ks)
      for (int64_t n : ns) {
        std::vector<float> wd;
        const std::vector<uint8_t> wh = make_weights(rng, ti.t, n, k, wd);
        uint8_t* w = to_device(wh);
        for (int64_t m : ms) {
          const std::vector<float> x = random_floats(rng, static_cast<size_t>(m * k), 1.0f);
          // ref: the exact product; ref8: with x rounded as the int8 path does; scale2: the
          // squared magnitudes of the terms (the scale f32 rounding errors are relative to).
          const std::vector<float> x8 = int8_roundtrip(x, k);
          std::vector<double> ref(static_cast<size_t>(m * n)), ref8(ref.size());
          double ref2 = 0, scale2 = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double s = 0, s8 = 0;
              for (int64_t e = 0; e < k; ++e) {
                const double wv = wd[j * k + e], p = static_cast<double>(x[i * k + e]) * wv;
                s += p;
                s8 += static_cast<double>(x8.empty() ? 0.0f : x8[i * k + e]) * wv;
                scale2 += p * p;
              }
              ref[i * n + j] = s;
              ref8[i * n + j] = s8;
              ref2 += s * s;
            }
          float* xd = to_device(x);
          float* out = nullptr;
          CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&out),
                                static_cast<size_t>(m * n) * sizeof(float)));
          for (int flags = 0; flags < 4; ++flags) {
            rlx::gpu::Caps caps;
            caps.warp = 32;
            caps.sm_count = 4;
            caps.tensor_cores = (flags & 1) != 0;
            caps.int8_act = (flags & 2) != 0;
            const size_t sb = rlx::gpu::matmul_scratch_bytes(ti.t, m, k, caps);
            void* scratch = nullptr;
            if (sb > 0) CHECK_CUDA(cudaMalloc(&scratch, sb));
            CHECK_CUDA(cudaMemset(out, 0xff, static_cast<size_t>(m * n) * sizeof(float)));  // NaN
            rlx::gpu::matmul(xd, w, ti.t, out, m, n, k, scratch, caps, stream);
            CHECK_CUDA(cudaGetLastError());
            CHECK_CUDA(cudaStreamSynchronize(stream));
            std::vector<float> got(static_cast<size_t>(m * n));
            CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float),
                                  cudaMemcpyDeviceToHost));
            if (scratch) CHECK_CUDA(cudaFree(scratch));
            double err2 = 0, err8 = 0;
            for (size_t i = 0; i < got.size(); ++i) {
              const double d = static_cast<double>(got[i]) - ref[i];
              const double d8 = static_cast<double>(got[i]) - ref8[i];
              err2 += d * d;
              err8 += d8 * d8;
            }
            const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
            const char* path = "";
            const double tol = tolerance(ti.t, m, caps, &path);
            const int pi = m <= 8 ? (caps.int8_act && is_block(ti.t) ? 1 : 0)
                                  : (caps.tensor_cores && ti.t != RLX_F32 ? 3 : 2);
            if (pi == 1) {
              // The kernel's own math: against x rounded to int8 blocks as it does, to f32
              // rounding (relative to the terms' magnitude: single dots may cancel).
              const double rel8 = std::sqrt(err8 / std::max(scale2, 1e-30));
              if (!(rel8 < 1e-5)) {
                std::printf("FAIL matmul %s m=%lld n=%lld k=%lld tc=%d (gemv-int8): %.3g off the "
                            "int8-rounded reference\n",
                            ti.name, static_cast<long long>(m), static_cast<long long>(n),
                            static_cast<long long>(k), caps.tensor_cores ? 1 : 0, rel8);
                ++g_failures;
              }
            }
            // The rounding of x makes single dot products that nearly cancel arbitrarily
            // inexact: the int8 path's rel. RMS bound holds over enough outputs (>= 32).
            const bool checked = pi != 1 || m * n >= 32;
            if (checked && !(rel < tol)) {
              std::printf("FAIL matmul %s m=%lld n=%lld k=%lld tc=%d int8=%d (%s): rel rms %.3g >= %.3g\n",
                          ti.name, static_cast<long long>(m), static_cast<long long>(n),
                          static_cast<long long>(k), caps.tensor_cores ? 1 : 0,
                          caps.int8_act ? 1 : 0, path, rel, tol);
              ++g_failures;
            }
            if (checked && !(rel <= worst[pi].err)) worst[pi].err = rel;
            ++worst[pi].runs;
          }
          CHECK_CUDA(cudaFree(out));
          CHECK_CUDA(cudaFree(xd));
        }
        CHECK_CUDA(cudaFree(w));
      }
    std::printf("matmul %-5s", ti.name);
    for (int p = 0; p < 4; ++p)
      if (worst[p].runs) std::printf("  %s %3d runs, worst rel rms %.2e", names[p], worst[p].runs, worst[p].err);
    std::printf("\n");
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
}

void test_embed() {
  std::mt19937 rng(99);
  const int64_t v = 5;
  const std::vector<int32_t> ids = {0, 4, 2, 5, 3, -1, 1, 4};
  const uint32_t node = 7;
  for (const TypeInfo& ti : types()) {
    if (!rlx::gpu::weight_supported(ti.t)) {
      std::printf("FAIL weight_supported(%s) (embed) is false\n", ti.name);
      ++g_failures;
      continue;
    }
    int fails = 0;
    for (int64_t d : ti.ks) {
      std::vector<float> deq;
      const std::vector<uint8_t> table = make_weights(rng, ti.t, v, d, deq);
      uint8_t* tab = to_device(table);
      int32_t* idd = to_device(ids);
      const int64_t s = static_cast<int64_t>(ids.size());
      float* out = nullptr;
      CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&out), static_cast<size_t>(s * d) * 4));
      CHECK_CUDA(cudaMemset(out, 0xff, static_cast<size_t>(s * d) * 4));
      uint32_t* errp = nullptr;
      CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&errp), 8));
      CHECK_CUDA(cudaMemset(errp, 0, 8));
      rlx::gpu::embed(tab, ti.t, idd, out, s, v, d, rlx::gpu::ErrWord{errp, node}, nullptr);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaStreamSynchronize(nullptr));
      std::vector<float> got(static_cast<size_t>(s * d));
      uint32_t err[2];
      CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost));
      CHECK_CUDA(cudaMemcpy(err, errp, 8, cudaMemcpyDeviceToHost));
      for (int64_t i = 0; i < s; ++i) {
        const bool bad = ids[i] < 0 || ids[i] >= v;
        for (int64_t e = 0; e < d; ++e) {
          const float want = bad ? 0.0f : deq[ids[i] * d + e];
          if (std::memcmp(&want, &got[i * d + e], 4) != 0) {
            if (fails++ < 5)
              std::printf("FAIL embed %s d=%lld row %lld elem %lld: %.9g != %.9g\n", ti.name,
                          static_cast<long long>(d), static_cast<long long>(i),
                          static_cast<long long>(e), got[i * d + e], want);
          }
        }
      }
      if (err[0] != node + 1 || (err[1] != 5u && err[1] != static_cast<uint32_t>(-1))) {
        std::printf("FAIL embed %s d=%lld: error word {%u, %u}\n", ti.name,
                    static_cast<long long>(d), err[0], err[1]);
        ++fails;
      }
      // All ids valid: the error word stays zero.
      CHECK_CUDA(cudaMemset(errp, 0, 8));
      rlx::gpu::embed(tab, ti.t, idd, out, 3, v, d, rlx::gpu::ErrWord{errp, node}, nullptr);
      CHECK_CUDA(cudaStreamSynchronize(nullptr));
      CHECK_CUDA(cudaMemcpy(err, errp, 8, cudaMemcpyDeviceToHost));
      if (err[0] != 0 || err[1] != 0) {
        std::printf("FAIL embed %s d=%lld: error word {%u, %u} with valid ids\n", ti.name,
                    static_cast<long long>(d), err[0], err[1]);
        ++fails;
      }
      CHECK_CUDA(cudaFree(errp));
      CHECK_CUDA(cudaFree(out));
      CHECK_CUDA(cudaFree(idd));
      CHECK_CUDA(cudaFree(tab));
    }
    g_failures += fails;
    std::printf("embed  %-5s %s\n", ti.name, fails ? "FAILED" : "bit-exact, error word ok");
  }
}

}  // namespace

int main() {
  test_embed();
  test_matmul();
  if (g_failures) {
    std::printf("%d failure(s)\n", g_failures);
    return 1;
  }
  std::printf("all passed\n");
  return 0;
}
