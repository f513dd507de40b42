// The cpu backend's ABI entry: rlx_plugin_query() and the tables it returns, nothing else.
// Each table function is a thin shim that validates handles, calls into device / buffer /
// program, and turns any C++ exception into an rlx_status plus one line in the caller's rlx_err:
// no exception ever crosses the C boundary.
//
// This file is compiled for the baseline ISA even in the avx2 / avx512 builds (see
// CMakeLists.txt): score() and rlx_plugin_query() run before the host knows whether this CPU
// can execute the variant, so they must not fault on an older one. Nothing here has a dynamic
// initializer either: the tables are constexpr and the state is created in init().
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "buffer.h"
#include "device.h"
#include "error.h"
#include "program.h"
#include "rlx/plugin_abi.h"

namespace {

using namespace rlx::cpu;

// The host's services; valid from init() until shutdown().
constinit const rlx_host_api* g_host = nullptr;

// Logging is best effort: it never turns a successful call into a failed one.
template <class... A>
void host_log(int level, const A&... parts) noexcept {
  try {
    if (g_host && g_host->struct_size >= offsetof(rlx_host_api, log) + sizeof g_host->log &&
        g_host->log)
      g_host->log(level, "cpu", cat(parts...).c_str());
  } catch (...) {
  }
}

using rlx::plugin::set_err;

// The ABI boundary every call goes through (plugins/common/plugin_error.h).
template <class F>
rlx_status guard(rlx_err err, F&& fn) noexcept {
  return rlx::plugin::guard(err, "cpu", std::forward<F>(fn));
}

// ---- the backend table ----------------------------------------------------------------------

rlx_status cpu_init(const rlx_host_api* host, rlx_err err) {
  return guard(err, [&] {
    if (host && host->abi_major != RLX_ABI_MAJOR)
      fail(RLX_ERR_UNSUPPORTED, "host ABI ", host->abi_major, ".", host->abi_minor,
           " but the cpu backend was built for ", RLX_ABI_MAJOR, ".", RLX_ABI_MINOR);
    g_host = host;
  });
}

void cpu_shutdown(void) {
  try {
    close_all_devices();  // joins every pool thread before the host unloads us
  } catch (...) {
  }
  g_host = nullptr;
}

rlx_status cpu_device_count(uint32_t* count, rlx_err err) {
  return guard(err, [&] {
    if (!count) fail(RLX_ERR_INVALID, "device_count: null output");
    *count = device_count();
  });
}

rlx_status cpu_device_info(uint32_t index, rlx_device_info* out, rlx_err err) {
  return guard(err, [&] { device_info(index, out); });
}

rlx_status cpu_device_open(uint32_t index, const rlx_device_options* opts, rlx_device** out,
                           rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "device_open: null output");
    *out = nullptr;
    Device* dev = open_device(index, opts);
    *out = to_handle(dev);
    host_log(RLX_LOG_DEBUG, "opened device ", index, " (" RLX_CPU_VARIANT ") with ",
             dev->pool().size(), " threads");
  });
}

void cpu_device_close(rlx_device* dev) {
  try {
    close_device(reinterpret_cast<Device*>(dev));
  } catch (...) {
  }
}

rlx_status cpu_buffer_alloc(rlx_device* dev, uint64_t bytes, rlx_buffer** out, rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "buffer_alloc: null output");
    *out = nullptr;
    *out = to_handle(checked_device(dev).alloc_buffer(bytes));
  });
}

// Zero-copy: the buffer is the host's memory (an mmap'd weight file). It is read-only: writes
// are refused with RLX_ERR_INVALID, and so is binding it to a slot a program writes.
rlx_status cpu_buffer_from_host(rlx_device* dev, const void* ptr, uint64_t bytes, rlx_buffer** out,
                                rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "buffer_from_host: null output");
    *out = nullptr;
    *out = to_handle(checked_device(dev).wrap_host(ptr, bytes));
  });
}

void cpu_buffer_free(rlx_device* dev, rlx_buffer* buf) {
  try {
    if (buf) checked_device(dev).free_buffer(reinterpret_cast<Buffer*>(buf));
  } catch (...) {
  }
}

rlx_status cpu_buffer_write(rlx_device* dev, rlx_buffer* buf, uint64_t offset, const void* src,
                            uint64_t bytes, rlx_err err) {
  return guard(err, [&] { checked_device(dev).buffer(buf).write(offset, src, bytes); });
}

rlx_status cpu_buffer_read(rlx_device* dev, rlx_buffer* buf, uint64_t offset, void* dst,
                           uint64_t bytes, rlx_err err) {
  return guard(err, [&] { checked_device(dev).buffer(buf).read(offset, dst, bytes); });
}

bool cpu_supports(rlx_device* dev, const rlx_graph_desc* graph, uint32_t node) {
  try {
    (void)dev;  // every cpu device runs the same kernels
    return graph && node_problem(*graph, node).empty();
  } catch (...) {
    return false;
  }
}

rlx_status cpu_program_compile(rlx_device* dev, const rlx_graph_desc* graph, rlx_program** out,
                               rlx_err err) {
  return guard(err, [&] {
    if (!out) fail(RLX_ERR_INVALID, "program_compile: null output");
    *out = nullptr;
    if (!graph) fail(RLX_ERR_INVALID, "program_compile: null graph");
    Device& d = checked_device(dev);
    *out = to_handle(d.add_program(std::make_unique<Program>(*graph)));
  });
}

rlx_status cpu_program_run(rlx_device* dev, rlx_program* prog, const rlx_binding* bindings,
                           uint32_t n_bindings, rlx_err err) {
  return guard(err, [&] {
    Device& d = checked_device(dev);
    d.program(prog).run(d, bindings, n_bindings);
  });
}

void cpu_program_free(rlx_device* dev, rlx_program* prog) {
  try {
    if (prog) checked_device(dev).free_program(reinterpret_cast<Program*>(prog));
  } catch (...) {
  }
}

constexpr rlx_backend_api kBackendApi = {
    .struct_size = sizeof(rlx_backend_api),
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_write = cpu_buffer_write,
    .buffer_read = cpu_buffer_read,
    .supports = cpu_supports,
    .program_compile = cpu_program_compile,
    .program_run = cpu_program_run,
    .program_free = cpu_program_free,
    .buffer_from_host = cpu_buffer_from_host,
    .reserved = {},
};

// ---- the header ---------------------------------------------------------------------------

// 0 when this CPU (and OS) cannot execute every ISA extension the variant was compiled with.
uint32_t cpu_score(void) {
  constexpr std::string_view variant = RLX_CPU_VARIANT;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // cheap and idempotent; needed if we run before libgcc's constructor
  if constexpr (variant == "avx512vnni") {
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx2") &&
                   __builtin_cpu_supports("fma")
               ? 40
               : 0;
  } else if constexpr (variant == "avx512") {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
               ? 30
               : 0;
  } else if constexpr (variant == "avx2") {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 20 : 0;
  }
#endif
  if constexpr (variant == "generic") return 10;
  return 0;  // an ISA variant this file does not know how to check: never pick it
}

constexpr rlx_plugin_info kInfo = {
    .abi_major = RLX_ABI_MAJOR,
    .abi_minor = RLX_ABI_MINOR,
    .struct_size = sizeof(rlx_plugin_info),
    .kind = RLX_PLUGIN_BACKEND,
    .name = "cpu",
    .variant = RLX_CPU_VARIANT,
    .version = "0.1.0",
    .description =
        "reference kernels (f32, packed f16/bf16/GGUF weights) on a pool of host "
        "threads (" RLX_CPU_VARIANT " build)",
    .score = cpu_score,
    .api = &kBackendApi,
    .reserved = {},
};

}  // namespace

// The one exported symbol. The header is returned whatever host_abi_major says: its first
// fields (abi_major, abi_minor, struct_size) are what lets a host of another major print a
// message naming both versions instead of failing blindly. The host refuses us in that case,
// and init() refuses a host of another major as a second line of defence.
extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t host_abi_major) {
  (void)host_abi_major;
  return &kInfo;
}
