// Reading a planned graph's tensor descriptors, for the in-tree backends: element counts, rows,
// shape comparisons and one-line descriptions for messages. Header-only, like plugin_error.h.
#pragma once

#include <cstdint>
#include <string>

#include "plugin_error.h"
#include "rlx/plugin_abi.h"

namespace rlx::plugin {

inline const char* dtype_name(uint32_t dt) {
  switch (dt) {
    case RLX_F32: return "f32";
    case RLX_F16: return "f16";
    case RLX_BF16: return "bf16";
    case RLX_I32: return "i32";
    case RLX_I8: return "i8";
    case RLX_Q4_0: return "q4_0";
    case RLX_Q4_1: return "q4_1";
    case RLX_Q5_0: return "q5_0";
    case RLX_Q5_1: return "q5_1";
    case RLX_Q8_0: return "q8_0";
    case RLX_Q2_K: return "q2_k";
    case RLX_Q3_K: return "q3_k";
    case RLX_Q4_K: return "q4_k";
    case RLX_Q5_K: return "q5_k";
    case RLX_Q6_K: return "q6_k";
    case RLX_Q8_K: return "q8_k";
    default: return "unknown-dtype";
  }
}

// Element count, or -1 for a malformed shape (ndim > 4, negative dim, overflow).
inline int64_t numel(const rlx_tensor_desc& t) {
  if (t.ndim > RLX_MAX_DIMS) return -1;
  int64_t n = 1;
  for (uint32_t i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0 || __builtin_mul_overflow(n, t.shape[i], &n)) return -1;
  }
  return n;
}

inline int64_t last_dim(const rlx_tensor_desc& t) { return t.ndim == 0 ? 1 : t.shape[t.ndim - 1]; }

// Product of all dims but the last.
inline int64_t rows(const rlx_tensor_desc& t) {
  int64_t r = 1;
  for (uint32_t i = 0; i + 1 < t.ndim; ++i) r *= t.shape[i];
  return r;
}

inline bool same_shape(const rlx_tensor_desc& a, const rlx_tensor_desc& b) {
  if (a.ndim != b.ndim) return false;
  for (uint32_t i = 0; i < a.ndim; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

inline std::string describe(const rlx_tensor_desc& t) {
  std::string s = cat(dtype_name(t.dtype), "[");
  for (uint32_t i = 0; i < t.ndim && i < RLX_MAX_DIMS; ++i) s += cat(i ? ", " : "", t.shape[i]);
  return s + "]";
}

// ADD / MUL broadcast: b equals a's trailing dims, ignoring b's leading 1s.
inline bool trailing_dims_match(const rlx_tensor_desc& a, const rlx_tensor_desc& b) {
  uint32_t skip = 0;
  while (skip < b.ndim && b.shape[skip] == 1 && b.ndim - skip > a.ndim) ++skip;
  uint32_t nb = b.ndim - skip;
  if (nb > a.ndim) return false;
  for (uint32_t i = 0; i < nb; ++i)
    if (b.shape[skip + i] != a.shape[a.ndim - nb + i]) return false;
  return true;
}

}  // namespace rlx::plugin
