// ggml's tensor type numbering (as stored in GGUF tensor infos) and its mapping to rlx dtypes.
#include <array>

#include "rlx/error.h"
#include "rlx/gguf.h"

namespace rlx {
namespace {

struct GgmlRow {
  uint32_t id;
  std::string_view name;
  int dtype;  // rlx_dtype, or -1 when rlx has no kernels for it
};

// ids 4, 5 (q4_2, q4_3) and 31..33 (the old q4_0_4_4 family) were removed from ggml.
constexpr std::array<GgmlRow, 33> kGgml = {{
    {0, "f32", RLX_F32},    {1, "f16", RLX_F16},       {2, "q4_0", RLX_Q4_0},
    {3, "q4_1", RLX_Q4_1},  {6, "q5_0", RLX_Q5_0},     {7, "q5_1", RLX_Q5_1},
    {8, "q8_0", RLX_Q8_0},  {9, "q8_1", -1},           {10, "q2_K", RLX_Q2_K},
    {11, "q3_K", RLX_Q3_K}, {12, "q4_K", RLX_Q4_K},    {13, "q5_K", RLX_Q5_K},
    {14, "q6_K", RLX_Q6_K}, {15, "q8_K", RLX_Q8_K},    {16, "iq2_xxs", -1},
    {17, "iq2_xs", -1},     {18, "iq3_xxs", -1},       {19, "iq1_s", -1},
    {20, "iq4_nl", -1},     {21, "iq3_s", -1},         {22, "iq2_s", -1},
    {23, "iq4_xs", -1},     {24, "i8", RLX_I8},        {25, "i16", -1},
    {26, "i32", RLX_I32},   {27, "i64", -1},           {28, "f64", -1},
    {29, "iq1_m", -1},      {30, "bf16", RLX_BF16},    {34, "tq1_0", -1},
    {35, "tq2_0", -1},      {4, "q4_2 (removed)", -1}, {5, "q4_3 (removed)", -1},
}};

const GgmlRow* ggml_row(uint32_t id) {
  for (const auto& r : kGgml)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace

std::optional<DType> dtype_from_ggml(uint32_t ggml_type) {
  const GgmlRow* r = ggml_row(ggml_type);
  if (!r || r->dtype < 0) return std::nullopt;
  return static_cast<DType>(r->dtype);
}

uint32_t ggml_type_of(DType t) {
  for (const auto& r : kGgml)
    if (r.dtype == static_cast<int>(t)) return r.id;
  fail("dtype {} has no GGUF type id", dtype_name(t));
}

std::string_view ggml_type_name(uint32_t t) {
  const GgmlRow* r = ggml_row(t);
  return r ? r->name : "unknown";
}

}  // namespace rlx
