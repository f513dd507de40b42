// The one error type of the in-tree backend plugins, shared header-only (a plugin links no
// rlx library). Everything inside a plugin reports failure by throwing Error(status, "one
// line"); its plugin.cpp catches it at the ABI boundary and turns it into an rlx_status plus the
// caller's rlx_err message. Nothing is thrown across the boundary.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
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

// Copies `msg` into the caller's buffer as one NUL-terminated line, truncating to fit.
// Tolerates err.msg == NULL and err.cap == 0 (the caller does not want the message).
inline void set_err(rlx_err err, const char* msg) noexcept {
  if (!err.msg || err.cap == 0) return;
  size_t n = msg ? std::strlen(msg) : 0;
  if (n > err.cap - 1) n = err.cap - 1;
  for (size_t i = 0; i < n; ++i) err.msg[i] = (msg[i] == '\n' || msg[i] == '\r') ? ' ' : msg[i];
  err.msg[n] = '\0';
}

// Runs `fn`; maps what it throws to a status and a message. The boundary every ABI call of a
// plugin goes through; `who` names the plugin in the message for an unknown exception.
template <class F>
rlx_status guard(rlx_err err, const char* who, F&& fn) noexcept {
  try {
    set_err(err, "");
    fn();
    return RLX_OK;
  } catch (const Error& e) {
    set_err(err, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_err(err, "out of host memory");
    return RLX_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_err(err, e.what());
    return RLX_ERR_INTERNAL;
  } catch (...) {
    set_err(err, cat("unknown C++ exception in the ", who, " backend").c_str());
    return RLX_ERR_INTERNAL;
  }
}

}  // namespace rlx::plugin
