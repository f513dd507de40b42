// The ABI table of a GPU backend, header-only: every rlx_backend_api entry as a thin shim that
// validates handles, calls the backend's C++ (device / buffer / program), and turns any C++
// exception into an rlx_status plus one line in the caller's rlx_err, so no exception crosses
// the C boundary. vulkan and cuda (with rocm and cudaemu) use it; each plugin.cpp is then just
// its traits and its header.
//
// B, the backend's traits, provides:
//   static constexpr const char* kName, kDisableEnv  "vulkan", "RLX_VULKAN_DISABLE_OPS"
//   using Device, Buffer, Program
//   Device: alloc_buffer(bytes) -> Buffer*, free_buffer(Buffer*), buffer(const rlx_buffer*),
//           write(Buffer&, offset, src, bytes), read(Buffer&, offset, dst, bytes),
//           add_program(unique_ptr<Program>) -> Program*, free_program(Program*),
//           program(const rlx_program*)
//   Program: Program(Device&, const rlx_graph_desc&), run(bindings, n_bindings)
//   static uint32_t device_count(); static void device_info(uint32_t, rlx_device_info*);
//   static Device* open_device(uint32_t, const rlx_device_options*);
//   static void close_device(Device*); static Device& checked_device(const rlx_device*);
//   static void close_all_devices();   (shutdown: frees everything, joins every thread)
//   static std::string node_problem(Device&, const rlx_graph_desc&, uint32_t node)
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "plugin_error.h"
#include "rlx/plugin_abi.h"

namespace rlx::plugin {

// `list` (comma-separated op names, e.g. from RLX_<NAME>_DISABLE_OPS) names `op`.
inline bool op_listed(const char* list, const char* op) {
  if (!list || !op) return false;
  const std::string_view want(op);
  for (std::string_view rest(list); !rest.empty();) {
    const size_t comma = rest.find(',');
    if (rest.substr(0, comma) == want) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

template <class B>
struct BackendShim {
  using Device = typename B::Device;
  using Buffer = typename B::Buffer;
  using Program = typename B::Program;

  // The host's services; valid from init() until shutdown().
  static inline constinit const rlx_host_api* host = nullptr;

  // Logging is best effort: it never turns a successful call into a failed one.
  template <class... A>
  static void log(int level, const A&... parts) noexcept {
    try {
      if (host && host->struct_size >= offsetof(rlx_host_api, log) + sizeof host->log && host->log)
        host->log(level, B::kName, cat(parts...).c_str());
    } catch (...) {
    }
  }

  template <class F>
  static rlx_status run(rlx_err err, F&& fn) noexcept {
    return guard(err, B::kName, std::forward<F>(fn));
  }

  static rlx_status init(const rlx_host_api* h, rlx_err err) {
    return run(err, [&] {
      if (h && h->abi_major != RLX_ABI_MAJOR)
        fail(RLX_ERR_UNSUPPORTED, "host ABI ", h->abi_major, ".", h->abi_minor, " but the ",
             B::kName, " backend was built for ", RLX_ABI_MAJOR, ".", RLX_ABI_MINOR);
      host = h;
    });
  }

  static void shutdown(void) {
    try {
      B::close_all_devices();
    } catch (...) {
    }
    host = nullptr;
  }

  static rlx_status device_count(uint32_t* count, rlx_err err) {
    return run(err, [&] {
      if (!count) fail(RLX_ERR_INVALID, "device_count: null output");
      *count = B::device_count();
    });
  }

  static rlx_status device_info(uint32_t index, rlx_device_info* out, rlx_err err) {
    return run(err, [&] { B::device_info(index, out); });
  }

  static rlx_status device_open(uint32_t index, const rlx_device_options* opts, rlx_device** out,
                                rlx_err err) {
    return run(err, [&] {
      if (!out) fail(RLX_ERR_INVALID, "device_open: null output");
      *out = nullptr;
      *out = reinterpret_cast<rlx_device*>(B::open_device(index, opts));
      log(RLX_LOG_DEBUG, "opened device ", index);
    });
  }

  static void device_close(rlx_device* dev) {
    try {
      B::close_device(reinterpret_cast<Device*>(dev));
    } catch (...) {
    }
  }

  static rlx_status buffer_alloc(rlx_device* dev, uint64_t bytes, rlx_buffer** out, rlx_err err) {
    return run(err, [&] {
      if (!out) fail(RLX_ERR_INVALID, "buffer_alloc: null output");
      *out = nullptr;
      *out = reinterpret_cast<rlx_buffer*>(B::checked_device(dev).alloc_buffer(bytes));
    });
  }

  static void buffer_free(rlx_device* dev, rlx_buffer* buf) {
    try {
      if (buf) B::checked_device(dev).free_buffer(reinterpret_cast<Buffer*>(buf));
    } catch (...) {
    }
  }

  static rlx_status buffer_write(rlx_device* dev, rlx_buffer* buf, uint64_t offset,
                                 const void* src, uint64_t bytes, rlx_err err) {
    return run(err, [&] {
      Device& d = B::checked_device(dev);
      d.write(d.buffer(buf), offset, src, bytes);
    });
  }

  static rlx_status buffer_read(rlx_device* dev, rlx_buffer* buf, uint64_t offset, void* dst,
                                uint64_t bytes, rlx_err err) {
    return run(err, [&] {
      Device& d = B::checked_device(dev);
      d.read(d.buffer(buf), offset, dst, bytes);
    });
  }

  // B::kDisableEnv=rope,attention makes the backend refuse those ops, so that the host runs them
  // on the cpu: to test that fallback, or to rule a suspect kernel out.
  static bool supports(rlx_device* dev, const rlx_graph_desc* graph, uint32_t node) {
    try {
      if (!graph) return false;
      if (node < graph->n_nodes && op_listed(std::getenv(B::kDisableEnv), graph->nodes[node].op_name))
        return false;
      return B::node_problem(B::checked_device(dev), *graph, node).empty();
    } catch (...) {
      return false;
    }
  }

  static rlx_status program_compile(rlx_device* dev, const rlx_graph_desc* graph,
                                    rlx_program** out, rlx_err err) {
    return run(err, [&] {
      if (!out) fail(RLX_ERR_INVALID, "program_compile: null output");
      *out = nullptr;
      if (!graph) fail(RLX_ERR_INVALID, "program_compile: null graph");
      Device& d = B::checked_device(dev);
      *out = reinterpret_cast<rlx_program*>(d.add_program(std::make_unique<Program>(d, *graph)));
    });
  }

  static rlx_status program_run(rlx_device* dev, rlx_program* prog, const rlx_binding* bindings,
                                uint32_t n_bindings, rlx_err err) {
    return run(err, [&] { B::checked_device(dev).program(prog).run(bindings, n_bindings); });
  }

  static void program_free(rlx_device* dev, rlx_program* prog) {
    try {
      if (prog) B::checked_device(dev).free_program(reinterpret_cast<Program*>(prog));
    } catch (...) {
    }
  }

  // Device memory only: the host uploads weights once per device (no buffer_from_host).
  static constexpr rlx_backend_api api = {
      .struct_size = sizeof(rlx_backend_api),
      .init = init,
      .shutdown = shutdown,
      .device_count = device_count,
      .device_info = device_info,
      .device_open = device_open,
      .device_close = device_close,
      .buffer_alloc = buffer_alloc,
      .buffer_free = buffer_free,
      .buffer_write = buffer_write,
      .buffer_read = buffer_read,
      .supports = supports,
      .program_compile = program_compile,
      .program_run = program_run,
      .program_free = program_free,
      .buffer_from_host = nullptr,
      .reserved = {},
  };
};

}  // namespace rlx::plugin
