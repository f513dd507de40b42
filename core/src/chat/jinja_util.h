// Helpers shared by the Jinja value and evaluator code (internal).
#pragma once

#include <cstdint>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "jinja.h"

namespace rlx::chat {

inline double num(const Value& v) {
  return v.t == Value::T::Float ? v.f : v.t == Value::T::Bool ? (v.b ? 1.0 : 0.0) : static_cast<double>(v.i);
}
// Floats are truncated toward zero and saturate at the int64 range (NaN -> 0): a template's
// number never makes an undefined conversion.
inline int64_t as_int(const Value& v) {
  if (v.t == Value::T::Bool) return v.b ? 1 : 0;
  if (v.t != Value::T::Float) return v.i;
  if (!(v.f == v.f)) return 0;
  if (v.f >= 9223372036854775807.0) return INT64_MAX;
  if (v.f <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v.f);
}

struct JsonStyle {
  int indent = -1;  // < 0: one line
  std::string item_sep = ", ", key_sep = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& st, int level);
std::string json_string(std::string_view s);
std::string py_float(double x);

// Code points of UTF-8 text (a stray byte counts as one); `offsets` gets each code point's
// byte offset plus the end.
std::vector<uint32_t> decode_utf8(std::string_view s, std::vector<size_t>* offsets);
bool py_isspace(uint32_t c);
// Python's str.strip / lstrip / rstrip (chars == nullptr: Unicode whitespace).
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);

}  // namespace rlx::chat
