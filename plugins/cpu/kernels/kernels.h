// The cpu backend's f32 reference kernels, one function per op in ops.def (the semantics live
// there). Conventions: dense row-major tensors, "rows" = all leading dims flattened, counts are
// elements (not bytes). Every kernel whose op is flagged inplace in ops.def is correct when
// `out` is the same pointer as its first input. Kernels split work with the device's pool;
// they throw rlx::cpu::Error only before writing any output (EMBED's id check).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace rlx::cpu {

class ThreadPool;

// ---- elementwise.cpp ------------------------------------------------------------------------

// out[i] = a[i] + b[i % nb]: a, out [n]; b [nb] is a's shape or a's trailing dims (n % nb == 0).
void add_f32(ThreadPool& pool, const float* a, const float* b, float* out, int64_t n, int64_t nb);
// out[i] = a[i] * b[i % nb], same broadcast as add_f32.
void mul_f32(ThreadPool& pool, const float* a, const float* b, float* out, int64_t n, int64_t nb);
// out[i] = a[i] * s
void scale_f32(ThreadPool& pool, const float* a, float s, float* out, int64_t n);
// out[i] = a[i] / (1 + exp(-a[i]))
void silu_f32(ThreadPool& pool, const float* a, float* out, int64_t n);
// out[i] = silu(gate[i]) * up[i]   (SwiGLU)
void silu_mul_f32(ThreadPool& pool, const float* gate, const float* up, float* out, int64_t n);
// a [rows, n] -> out i32 [rows]: index of the largest value, the first one on ties; NaNs are
// skipped (a row of only NaNs gives 0).
void argmax_f32(ThreadPool& pool, const float* a, int32_t* out, int64_t rows, int64_t n);

// ---- norm.cpp -------------------------------------------------------------------------------

// x [rows, d], w [d] -> out [rows, d] = x / sqrt(mean(x^2) + eps) * w
void rms_norm_f32(ThreadPool& pool, const float* x, const float* w, float* out, int64_t rows,
                  int64_t d, float eps);
// a [rows, n] -> out [rows, n], softmax over each row, max-subtracted.
void softmax_f32(ThreadPool& pool, const float* a, float* out, int64_t rows, int64_t n);

// ---- matmul.cpp -----------------------------------------------------------------------------

// x [m, k] @ w[n, k]^T -> out [m, n]; f32 accumulation. `out` must not overlap x or w.
void matmul_f32(ThreadPool& pool, const float* x, const float* w, float* out, int64_t m, int64_t n,
                int64_t k);
// One block of matmul_f32 on the calling thread: out[i, j] = x[i] . w[j - j0] for i in [i0, i1),
// j in [j0, j1). `w` points at weight row j0 (rows k floats apart), `out` rows are n apart.
// Walks x in 16-row sub-blocks so a block of up to ~64 x 16 rows stays in L2.
void matmul_block_f32(const float* x, const float* w, float* out, int64_t i0, int64_t i1,
                      int64_t j0, int64_t j1, int64_t n, int64_t k);

// The output [m, n] of a matmul cut into tiles of bm rows x bn columns for the pool; tile t has
// rows [i0, i1) and columns (weight rows) [j0, j1). Column tiles vary fastest: neighbouring
// chunks share x rows, and for decode each thread streams its own contiguous slab of w.
struct TileGrid {
  int64_t m, n, bm, bn;
  struct Tile {
    int64_t i0, i1, j0, j1;
  };
  int64_t cols() const { return (n + bn - 1) / bn; }
  int64_t count() const { return (m + bm - 1) / bm * cols(); }
  Tile operator[](int64_t t) const {
    const int64_t i0 = (t / cols()) * bm, j0 = (t % cols()) * bn;
    return {i0, i0 + bm < m ? i0 + bm : m, j0, j0 + bn < n ? j0 + bn : n};
  }
};

// ---- embed.cpp ------------------------------------------------------------------------------

// table [v, d], ids [s] -> out [s, d], out[i] = table[ids[i]]. Checks every id first and
// throws Error(RLX_ERR_INVALID, "token id X out of range [0, V)") without writing anything.
void embed_f32(ThreadPool& pool, const float* table, int64_t v, int64_t d, const int32_t* ids,
               int64_t s, float* out);

// ---- quant.cpp ------------------------------------------------------------------------------
//
// Weights in any dtype rlx/quant.h reads (f32, f16, bf16, q4_0 ... q8_k), kept packed: `w` and
// `table` are raw bytes of rows of quant::row_bytes(dtype, k) bytes, at any alignment.

// x [m, k] f32 @ w [n, k]^T -> out [m, n] f32. Dequantizes tiles of 16 weight rows into a per-
// chunk f32 scratch (16 * k floats) and runs matmul_block_f32 on them; no full f32 copy of w.
void matmul_packed(ThreadPool& pool, const float* x, const uint8_t* w, uint32_t w_dtype, float* out,
                   int64_t m, int64_t n, int64_t k);
// table [v, d] packed, ids [s] -> out [s, d] f32: out[i] = dequantized row ids[i]. Checks every
// id first, as embed_f32 does.
void embed_packed(ThreadPool& pool, const uint8_t* table, uint32_t dtype, int64_t v, int64_t d,
                  const int32_t* ids, int64_t s, float* out);

// ---- qdot.cpp -------------------------------------------------------------------------------

// Memory a kernel reuses from call to call: grows to the largest request and stays, so decode
// steps allocate nothing. One per device (runs on a device are serialized).
class Scratch {
 public:
  void* get(size_t bytes) {  // 64-byte aligned, valid until the next get()
    if (buf_.size() < bytes + 64) buf_.resize(bytes + 64);
    const auto p = reinterpret_cast<uintptr_t>(buf_.data());
    return buf_.data() + ((64 - p % 64) % 64);
  }

 private:
  std::vector<uint8_t> buf_;
};

// Whether matmul_q8 has an integer kernel for this weight dtype and row length (x86 builds with
// AVX2: q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k; k whole blocks).
bool matmul_q8_supported(uint32_t w_dtype, int64_t k);
// matmul_packed's contract, with x quantized to 8-bit blocks of 32 first (rel. error ~1e-3 per
// output, like llama.cpp's), the weights read in place with int8 dot products.
void matmul_q8(ThreadPool& pool, Scratch& scratch, const float* x, const uint8_t* w,
               uint32_t w_dtype, float* out, int64_t m, int64_t n, int64_t k);

// f16 / bf16 weights for few x rows (decode): out = x @ w^T with the conversion fused into the
// f32 dot product (x86 with AVX2 + F16C; elsewhere unsupported, the dequantizing path serves).
bool gemv_16bit_supported(uint32_t w_dtype);
void gemv_16bit(ThreadPool& pool, const float* x, const uint8_t* w, uint32_t w_dtype, float* out,
                int64_t m, int64_t n, int64_t k);

// ---- rope.cpp -------------------------------------------------------------------------------

struct RopeParams {
  int64_t s = 0;  // rows (tokens)
  int64_t h = 0;  // heads
  int64_t d = 0;  // head dim
  int64_t r = 0;  // rotated dims, even, <= d; dims >= r are copied through
  int mode = 0;   // 0 = adjacent pairs (x[2i], x[2i+1]), 1 = halves (x[i], x[i + r/2])
  float theta = 10000.0f;
};
// x [s, h, d], pos [s], freq_factors [r/2] or nullptr -> out [s, h, d];
// angle_i = pos * theta^(-2i/r) / freq_factors[i], computed in double.
void rope_f32(ThreadPool& pool, const float* x, const int32_t* pos, const float* freq_factors,
              float* out, const RopeParams& p);

// ---- attention.cpp --------------------------------------------------------------------------

struct AttentionParams {
  int64_t s = 0;        // query rows
  int64_t t = 0;        // key/value rows in the tensors (the cache capacity)
  int64_t hq = 0;       // query heads
  int64_t hkv = 0;      // key/value heads, hq % hkv == 0
  int64_t d = 0;        // head dim (q, k and v)
  int64_t past = 0;     // query row i sits at absolute position past + i
  int64_t kv_len = 0;   // keys [0, kv_len) are valid, kv_len <= t; rows beyond are never read
  bool causal = false;  // query i sees keys j <= past + i (and j < kv_len)
  float scale = 1.0f;   // applied to q.k before the softmax
  // Positions [s] (a KV cache of capacity t): query i sees keys j <= pos[i] and j < t; past,
  // kv_len and causal are ignored. nullptr = use them.
  const int32_t* pos = nullptr;
};
// q [s, hq, d], k [t, hkv, d], v [t, hkv, d] -> out [s, hq, d]; query head h reads kv head
// h / (hq / hkv). A query row that sees no key gets zeros. `out` must not overlap q, k or v.
void attention_f32(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
                   const AttentionParams& p);

// KV_STORE: cache [t, row] f32, x [s, row], pos [s] -> cache[pos[i]] = x[i], in order (a
// repeated position keeps the last row). Every position is checked first: one outside [0, t)
// throws Error(RLX_ERR_INVALID) before anything is written.
void kv_store_f32(float* cache, int64_t t, const float* x, const int32_t* pos, int64_t s,
                  int64_t row);

// ---- helpers shared by the kernels -----------------------------------------------------------

// A portable SIMD register through GCC/Clang vector extensions, as wide as the build's ISA: one
// zmm (avx512), ymm (avx2) or xmm (generic; wider would round-trip through the stack). Plain
// loops with a float accumulator are a serial chain the compiler may not reorder without
// -ffast-math, so the reductions use these.
#if defined(__AVX512F__)
inline constexpr int kVecLanes = 16;
#elif defined(__AVX__)
inline constexpr int kVecLanes = 8;
#else
inline constexpr int kVecLanes = 4;
#endif
typedef float VecF32 __attribute__((vector_size(kVecLanes * sizeof(float))));

// Unaligned load (compiles to one vmovups, or two movups).
#define RLX_CPU_LOADV(dst, ptr) std::memcpy(&(dst), (ptr), sizeof(VecF32))

// Sum of the lanes, pairwise (keeps the rounding error of the final fold small). Lanes are
// read by subscript: taking the vector's address would pin the accumulators to the stack.
#define RLX_CPU_HSUM(v, out)                                         \
  do {                                                               \
    float lanes_[kVecLanes];                                         \
    for (int j_ = 0; j_ < kVecLanes; ++j_) lanes_[j_] = (v)[j_];     \
    for (int w_ = kVecLanes / 2; w_ > 0; w_ /= 2)                    \
      for (int j_ = 0; j_ < w_; ++j_) lanes_[j_] += lanes_[j_ + w_]; \
    (out) = lanes_[0];                                               \
  } while (0)

// sum(a[i] * b[i]) over n, f32 accumulation in 4 x kVecLanes independent partial sums (enough
// chains to cover the add latency).
inline float dot_f32(const float* a, const float* b, int64_t n) {
  VecF32 acc0 = {}, acc1 = {}, acc2 = {}, acc3 = {}, va, vb;
  int64_t i = 0;
  for (; i + 4 * kVecLanes <= n; i += 4 * kVecLanes) {
    RLX_CPU_LOADV(va, a + i);
    RLX_CPU_LOADV(vb, b + i);
    acc0 += va * vb;
    RLX_CPU_LOADV(va, a + i + kVecLanes);
    RLX_CPU_LOADV(vb, b + i + kVecLanes);
    acc1 += va * vb;
    RLX_CPU_LOADV(va, a + i + 2 * kVecLanes);
    RLX_CPU_LOADV(vb, b + i + 2 * kVecLanes);
    acc2 += va * vb;
    RLX_CPU_LOADV(va, a + i + 3 * kVecLanes);
    RLX_CPU_LOADV(vb, b + i + 3 * kVecLanes);
    acc3 += va * vb;
  }
  for (; i + kVecLanes <= n; i += kVecLanes) {
    RLX_CPU_LOADV(va, a + i);
    RLX_CPU_LOADV(vb, b + i);
    acc0 += va * vb;
  }
  acc0 += acc1;
  acc2 += acc3;
  acc0 += acc2;
  float sum;
  RLX_CPU_HSUM(acc0, sum);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace rlx::cpu
