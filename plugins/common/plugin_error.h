// The one error type of the in-tree backend plugins, shared header-only (a plugin links no
// rlx library). Everything inside a plugin reports failure by throwing Error(status, "one
// line"); its plugin.cpp catches it at the ABI boundary and turns it into an rlx_status plus the
// caller's rlx_err message. Nothing is thrown across the boundary.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "rlx/plugin_abi.h"

namespace rlx::plugin {

class Error : public std::runtime_error {
 public:
  Error(rlx_status status, const std::string& msg) : std::runtime_error(msg), status_(status) {}
  rlx_status status() const { return status_; }

 private:
  rlx_status status_;
};

namespace detail {
inline void append(std::string& s, std::string_view v) { s.append(v); }
inline void append(std::string& s, const char* v) { s.append(v ? v : "(null)"); }
inline void append(std::string& s, const std::string& v) { s.append(v); }
inline void append(std::string& s, char c) { s.push_back(c); }
// Numbers via snprintf, not std::to_string: libstdc++'s to_string keeps its digit table in a
// STB_GNU_UNIQUE object, and one such symbol makes glibc refuse to ever unload the plugin.
template <class T>
requires std::is_arithmetic_v<T>
void append(std::string& s, T v) {
  char buf[32];
  int n;
  if constexpr (std::is_floating_point_v<T>)
    n = std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  else if constexpr (std::is_signed_v<T>)
    n = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    n = std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  if (n > 0)
    s.append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
}
}  // namespace detail

// cat("node ", 3, " (", name, ")") -> "node 3 (matmul)"
template <class... A>
std::string cat(const A&... parts) {
  std::string s;
  (detail::append(s, parts), ...);
  return s;
}

template <class... A>
[[noreturn]] void fail(rlx_status status, const A&... parts) {
  throw Error(status, cat(parts...));
}

}  // namespace rlx::plugin
