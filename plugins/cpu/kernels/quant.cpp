// MATMUL and EMBED with packed weights: f16, bf16 and the GGUF block types of rlx/quant.h
// (block layouts are documented there). The weight stays packed in its buffer; each work item
// dequantizes only the rows it needs into a small f32 scratch.
//
// MATMUL: x [m, k] f32 @ w [n, k]^T -> out [m, n]. Work items are (64 x rows, 16 w rows)
// blocks, w-tiles varying fastest. An item dequantizes its 16 w rows once (16 * k floats, 256 KB
// at k = 4096) and matmul_block_f32 reuses them for its 64 x rows in 16-row sub-blocks, so the
// dequantization costs 1/64 of the multiply-adds in prefill. Decode (m = 1) streams w once:
// bound by the dequantization speed, which this scalar reference code does not optimize (a
// q8-activation integer dot is the later speed work).
//
// The dequantized weights are bit-identical to quant.h's in the core whatever the ISA flags
// (see the note on FMA there), so the float64 reference and every variant see the same weights.
#include "rlx/quant.h"

#include <algorithm>
#include <vector>

#include "../error.h"
#include "../thread_pool.h"
#include "kernels.h"

namespace rlx::cpu {
namespace {

constexpr int64_t kBlockM = 64;  // x rows per work item
constexpr int64_t kTileN = 16;   // w rows per work item (and per dequantized tile)

rlx_dtype as_dtype(uint32_t dt) { return static_cast<rlx_dtype>(dt); }

// Bytes of one packed row of k elements; throws if k is not whole blocks (compile checked it).
int64_t packed_row_bytes(uint32_t dtype, int64_t k) {
  const int64_t b = quant::row_bytes(as_dtype(dtype), k);
  if (b < 0)
    fail(RLX_ERR_INTERNAL, "rows of ", k, " elements are not whole blocks of dtype ", dtype);
  return b;
}

}  // namespace

void matmul_packed(ThreadPool& pool, const float* x, const uint8_t* w, uint32_t w_dtype, float* out,
                   int64_t m, int64_t n, int64_t k) {
  const int64_t wrow = packed_row_bytes(w_dtype, k);
  const rlx_dtype dt = as_dtype(w_dtype);
  const TileGrid grid{m, n, kBlockM, kTileN};
  pool.parallel_for(grid.count(), [&](int64_t begin, int64_t end) {
    // Per chunk (a few per thread and call): no shared scratch, no thread_local in a plugin.
    std::vector<float> tile(static_cast<size_t>(kTileN * k));
    for (int64_t t = begin; t < end; ++t) {
      const auto [i0, i1, j0, j1] = grid[t];
      for (int64_t j = j0; j < j1; ++j)
        quant::dequantize_row(dt, w + j * wrow, tile.data() + (j - j0) * k, k);
      matmul_block_f32(x, tile.data(), out, i0, i1, j0, j1, n, k);
    }
  });
}

void embed_packed(ThreadPool& pool, const uint8_t* table, uint32_t dtype, int64_t v, int64_t d,
                  const int32_t* ids, int64_t s, float* out) {
  for (int64_t i = 0; i < s; ++i)
    if (ids[i] < 0 || ids[i] >= v)
      fail(RLX_ERR_INVALID, "token id ", ids[i], " out of range [0, ", v, ")");
  const int64_t row = packed_row_bytes(dtype, d);
  const rlx_dtype dt = as_dtype(dtype);
  pool.parallel_for(
      s,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          quant::dequantize_row(dt, table + static_cast<int64_t>(ids[i]) * row, out + i * d, d);
      },
      std::max<int64_t>(1, 16384 / std::max<int64_t>(d, 1)));
}

}  // namespace rlx::cpu
