// The conformance cases: for every op in ops.def, a list of input shapes, attributes and the
// error budget a backend gets against the float64 reference. Inputs are generated from a seed
// so every backend sees the same bytes for one case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rlx/ops.h"

namespace rlx::conformance {

// Host copy of one tensor: f32 and i32 activations, and weights in any dtype rlx/quant.h
// converts (f16, bf16, the GGUF block types), which are bound as their packed bytes.
struct HostTensor {
  DType dtype = RLX_F32;
  Shape shape;
  std::vector<float> f;         // f32; for a packed dtype the dequantized values (the reference's)
  std::vector<int32_t> i;       // dtype == RLX_I32
  std::vector<uint8_t> packed;  // packed dtypes: the bytes a backend reads

  int64_t elems() const;
  uint64_t bytes() const;
  const void* data() const;
  void* data();
  double at(int64_t k) const { return dtype == RLX_I32 ? double(i[k]) : double(f[k]); }
};

enum class Fill {
  Uniform,     // f32 uniform in [lo, hi]
  RandomInt,   // i32 uniform in [lo, hi)
  Sequence,    // i32 lo, lo + 1, ... (positions of consecutive tokens)
  Distinct,    // f32 rows whose values are spaced >= 2/n apart, so argmax has no near-ties
  DistinctTie  // as Distinct, plus an exact copy of each row's max later in the row
};

struct InputSpec {
  std::string name;
  DType dtype = RLX_F32;
  Shape shape;
  bool weight = false;  // declared with GraphBuilder::weight instead of input
  Fill fill = Fill::Uniform;
  double lo = -1.0, hi = 1.0;
  // Rows (along dim 0) from here on hold large junk that a correct kernel never reads: the
  // unused tail of a KV cache. -1 = none.
  int64_t junk_from = -1;
  std::vector<int32_t> fixed;  // i32 values used as-is when not empty (out-of-range ids)
};

// How the op under test is embedded in its graph. A lone view or update of a graph input cannot
// be a graph output (it has no storage of its own to bind), so reshape, slice and kv_store cases
// put a scale node on one side of it, or (kv_store) feed the updated caches to attention.
enum class Wrap {
  None,
  ScaleBefore,  // out = op(scale(in0), in1..)
  ScaleAfter,   // out = scale(op(in..))
  // kv_store into attention, one decode / prefill step of a model. Inputs: k_cache, k_new, pos,
  // v_cache, v_new, q; out = attention(q, kv_store(k_cache, k_new, pos),
  //                                       kv_store(v_cache, v_new, pos), pos)
  IntoAttention,
};
inline constexpr float kWrapScale = -2.0f;  // exact in f32: the check stays bit-for-bit

struct Case {
  std::string op;    // ops.def name
  std::string name;  // short description: shapes and attributes
  std::vector<InputSpec> inputs;
  NodeAttrs attrs;
  Shape out_hint;             // reshape's target shape
  Wrap wrap = Wrap::None;     // the op under test sits after / before a scale(kWrapScale) node
  double threshold = 1e-7;    // max NMSE vs the float64 reference
  bool exact = false;         // integer output: must match exactly
  bool expect_error = false;  // the run must fail cleanly (and leave the sentinels intact)
};

// Every case, grouped by op in ops.def order.
std::vector<Case> make_cases();

// Deterministic inputs for case `c`: the same (c, seed) always yields the same values.
std::vector<HostTensor> make_inputs(const Case& c, uint64_t seed);

}  // namespace rlx::conformance
