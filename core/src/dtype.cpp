#include "rlx/dtype.h"

#include <array>

#include "rlx/error.h"

namespace rlx {
namespace {

struct DTypeRow {
  DType t;
  std::string_view name;
  int64_t block_elems;
  int64_t block_bytes;
};

// GGUF block geometry: elements per block and bytes per block.
constexpr std::array<DTypeRow, 16> kTable = {{
    {RLX_F32, "f32", 1, 4},
    {RLX_F16, "f16", 1, 2},
    {RLX_BF16, "bf16", 1, 2},
    {RLX_I32, "i32", 1, 4},
    {RLX_I8, "i8", 1, 1},
    {RLX_Q4_0, "q4_0", 32, 18},
    {RLX_Q4_1, "q4_1", 32, 20},
    {RLX_Q5_0, "q5_0", 32, 22},
    {RLX_Q5_1, "q5_1", 32, 24},
    {RLX_Q8_0, "q8_0", 32, 34},
    {RLX_Q2_K, "q2_k", 256, 84},
    {RLX_Q3_K, "q3_k", 256, 110},
    {RLX_Q4_K, "q4_k", 256, 144},
    {RLX_Q5_K, "q5_k", 256, 176},
    {RLX_Q6_K, "q6_k", 256, 210},
    {RLX_Q8_K, "q8_k", 256, 292},
}};

const DTypeRow* row(uint32_t t) {
  for (const auto& r : kTable)
    if (static_cast<uint32_t>(r.t) == t) return &r;
  return nullptr;
}

const DTypeRow& row_or_throw(DType t) {
  if (const DTypeRow* r = row(t)) return *r;
  fail("unknown dtype id {}", static_cast<uint32_t>(t));
}

}  // namespace

std::string_view dtype_name(DType t) {
  if (const DTypeRow* r = row(t)) return r->name;
  return "dtype#?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& r : kTable)
    if (r.name == name) return r.t;
  return std::nullopt;
}

int64_t dtype_block_elems(DType t) { return row_or_throw(t).block_elems; }
int64_t dtype_block_bytes(DType t) { return row_or_throw(t).block_bytes; }
bool dtype_is_quantized(DType t) { return row_or_throw(t).block_elems > 1; }
bool dtype_is_known(uint32_t t) { return row(t) != nullptr; }

uint64_t dtype_bytes(DType t, int64_t elems) {
  const DTypeRow& r = row_or_throw(t);
  if (elems < 0 || elems % r.block_elems != 0)
    fail("{} elements are not a whole number of {} blocks ({} elements each)", elems, r.name,
         r.block_elems);
  return static_cast<uint64_t>(elems / r.block_elems) * static_cast<uint64_t>(r.block_bytes);
}

}  // namespace rlx
