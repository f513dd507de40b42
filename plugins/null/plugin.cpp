// The null backend: the smallest complete rlx backend plugin, and the file to copy when you
// write your own. It loads, reports zero devices, and answers RLX_ERR_UNSUPPORTED to everything
// else. Every rule a real backend must follow is shown here, in place, with the reason.
//
// THE RULES
//   1. Include only rlx/plugin_abi.h from rlx. It is plain C (stdint, stddef, stdbool): no STL,
//      no C++ classes and no exceptions cross the boundary, so your plugin may be built with
//      another compiler, standard library or language than the host.
//   2. Export exactly one symbol, rlx_plugin_query (RLX_PLUGIN_EXPORT marks it; build with
//      hidden visibility - rlx_add_plugin() does - so nothing else leaks out).
//   3. Never let a C++ exception escape a table function. Catch everything at the boundary and
//      return an rlx_status; on failure write ONE line into the caller's rlx_err saying what was
//      wrong and where (see set_err and guard below). The host prints that line to the user.
//   4. No global constructors: no namespace-scope object with a non-trivial constructor
//      (std::string, std::vector, std::mutex is fine - it is constexpr). The host loads every
//      build it finds and calls score() before anything else; a variant built for an ISA this
//      CPU lacks must get that far without executing a single instruction it cannot run. Use
//      constexpr / constinit globals, and create real state in init() or lazily.
//   5. Check versions: the host passes its RLX_ABI_MAJOR to rlx_plugin_query and its full
//      version to init(). Fill abi_major / abi_minor / struct_size in the header honestly;
//      the host refuses a plugin of another major with a message naming both.
//   6. shutdown() must leave nothing running: close every device, free every buffer and join
//      every thread you started. The host unloads the library right after it returns.
//   7. Structs grow only at the end (a minor bump) and start with struct_size: when the host
//      hands you a struct, read no field beyond the size it says it has.
//
// BUILD (in tree, or out of tree against an installed rlx with find_package(rlx)):
//     rlx_add_plugin(backend null SOURCES plugin.cpp)
// produces librlx-backend-null.so; drop it into a plugin directory (--plugin-dir,
// RLX_PLUGIN_PATH or <prefix>/lib/rlx/plugins) and `rlx devices` lists it.
#include <cstdint>
#include <cstring>

#include "rlx/plugin_abi.h"

namespace {

// The name the host uses for --device and in messages. Change it when you copy this file.
constexpr const char* kName = "null";

// The host's services (a logger), valid from init() until shutdown(). A plain pointer with a
// constant initializer: no code runs at load time (rule 4).
constinit const rlx_host_api* g_host = nullptr;

// ---- error reporting (rule 3) ------------------------------------------------------------

// Copies `msg` into the caller's buffer as one NUL-terminated line, truncating to fit. The
// caller may pass msg == NULL or cap == 0 when it does not want the text: tolerate both.
void set_err(rlx_err err, const char* msg) noexcept {
  if (!err.msg || err.cap == 0) return;
  size_t n = msg ? std::strlen(msg) : 0;
  if (n > err.cap - 1) n = err.cap - 1;
  for (size_t i = 0; i < n; ++i) err.msg[i] = (msg[i] == '\n' || msg[i] == '\r') ? ' ' : msg[i];
  err.msg[n] = '\0';
}

// Every fallible table function goes through this: it runs `fn` (which returns an rlx_status
// and may throw) and turns any exception into a status plus a message. A real backend throws
// its own error type carrying a status and catches it here first.
template <class F>
rlx_status guard(rlx_err err, F&& fn) noexcept {
  try {
    set_err(err, "");
    return fn();
  } catch (...) {
    set_err(err, "null backend: internal error");
    return RLX_ERR_INTERNAL;
  }
}

// The one answer this backend gives: "not here", with the function that was asked.
rlx_status unsupported(rlx_err err, const char* what) {
  char line[160];
  std::strcpy(line, "the null backend has no devices and does not implement ");
  std::strncat(line, what, sizeof line - std::strlen(line) - 1);
  set_err(err, line);
  return RLX_ERR_UNSUPPORTED;
}

// ---- the backend table -------------------------------------------------------------------
// Each entry below says what a real backend must do there.

// Called once, after the host has checked the header and before any other table function.
// Refuse a host of another ABI major (rule 5); remember the host api for logging; set up
// global state (driver handles, a registry of open devices) here, not at load time.
rlx_status null_init(const rlx_host_api* host, rlx_err err) {
  return guard(err, [&] {
    if (host && host->abi_major != RLX_ABI_MAJOR) {
      set_err(err, "null backend: built for another rlx plugin ABI major version");
      return RLX_ERR_UNSUPPORTED;
    }
    g_host = host;
    // Log through the host, never to stdout. Check struct_size before using a field (rule 7).
    if (g_host && g_host->struct_size >= sizeof(rlx_host_api) && g_host->log)
      g_host->log(RLX_LOG_DEBUG, kName, "null backend loaded: it has no devices");
    return RLX_OK;
  });
}

// Rule 6: close every device still open, free everything, join every thread you started.
// Cannot fail and must not throw. The host unloads the library right after.
void null_shutdown(void) { g_host = nullptr; }

// The probe. "No device here" is 0 devices with RLX_OK (a GPU backend on a machine without
// that GPU); return an error status only when something is actually broken (e.g. the driver
// failed to initialise), with a message saying what to do about it.
rlx_status null_device_count(uint32_t* count, rlx_err err) {
  return guard(err, [&] {
    if (!count) {
      set_err(err, "device_count: null output pointer");
      return RLX_ERR_INVALID;
    }
    *count = 0;
    return RLX_OK;
  });
}

// Fill out->name ("NVIDIA H200"), type, driver, memory_total / memory_free (0 = unknown) and
// capabilities ("f32 f16 threads=8"). Write at most out->struct_size bytes (rule 7).
rlx_status null_device_info(uint32_t index, rlx_device_info* out, rlx_err err) {
  (void)index;
  (void)out;
  return guard(err, [&] { return unsupported(err, "device_info (device index out of range)"); });
}

// Open device `index`. opts may be NULL; opts->n_threads is how many host threads you may use
// (0 = your default). Return an opaque handle you can validate later.
rlx_status null_device_open(uint32_t index, const rlx_device_options* opts, rlx_device** out,
                            rlx_err err) {
  (void)index;
  (void)opts;
  return guard(err, [&] {
    if (out) *out = nullptr;  // leave outputs in a defined state on failure
    return unsupported(err, "device_open");
  });
}

// Free the device and everything still allocated on it. Must accept handles of devices that
// were already closed by shutdown, and must not throw.
void null_device_close(rlx_device* dev) { (void)dev; }

// Device memory. Alignment of at least 64 bytes is expected; report RLX_ERR_OUT_OF_MEMORY
// (with the size asked for) when the allocation fails.
rlx_status null_buffer_alloc(rlx_device* dev, uint64_t bytes, rlx_buffer** out, rlx_err err) {
  (void)dev;
  (void)bytes;
  return guard(err, [&] {
    if (out) *out = nullptr;
    return unsupported(err, "buffer_alloc");
  });
}

void null_buffer_free(rlx_device* dev, rlx_buffer* buf) {
  (void)dev;
  (void)buf;
}

// Host <-> device copies. Bounds-check [offset, offset + bytes) against the buffer size and
// name offset, bytes and size in the error. Synchronous: when it returns, the copy is done.
rlx_status null_buffer_write(rlx_device* dev, rlx_buffer* buf, uint64_t offset, const void* src,
                             uint64_t bytes, rlx_err err) {
  (void)dev;
  (void)buf;
  (void)offset;
  (void)src;
  (void)bytes;
  return guard(err, [&] { return unsupported(err, "buffer_write"); });
}

rlx_status null_buffer_read(rlx_device* dev, rlx_buffer* buf, uint64_t offset, void* dst,
                            uint64_t bytes, rlx_err err) {
  (void)dev;
  (void)buf;
  (void)offset;
  (void)dst;
  (void)bytes;
  return guard(err, [&] { return unsupported(err, "buffer_read"); });
}

// Can node `node` of `graph` run here? Look at the op (built-in id from ops.def, or a custom id
// >= RLX_OP_CUSTOM_BASE matched by op_name), every input's and the output's dtype and shape,
// and the attributes. Answer honestly: the host sends what you refuse to another backend (the
// cpu fallback), while a node you accept and then fail to compile is an error for the user.
// No status to report here, so swallow exceptions and say false.
bool null_supports(rlx_device* dev, const rlx_graph_desc* graph, uint32_t node) {
  (void)dev;
  (void)graph;
  (void)node;
  return false;
}

// Compile a planned graph into a program. The desc is valid only during this call: copy what
// you keep (including op_name strings). Check every node; refuse one you cannot run with
// RLX_ERR_UNSUPPORTED and "node N (op_name): why". Allocate the activation arena
// (graph->arena_bytes, aligned to graph->arena_alignment): tensors with storage
// RLX_STORAGE_ARENA live there at their offset.
rlx_status null_program_compile(rlx_device* dev, const rlx_graph_desc* graph, rlx_program** out,
                                rlx_err err) {
  (void)dev;
  (void)graph;
  return guard(err, [&] {
    if (out) *out = nullptr;
    return unsupported(err, "program_compile");
  });
}

// Run a program once, synchronously. bindings[i] backs slot i (n_bindings == the graph's
// n_slots): a RLX_STORAGE_SLOT tensor lives at bindings[slot].buffer + bindings[slot].offset +
// tensor.offset. Check every slot tensor fits its buffer before touching memory. Run-time data
// errors (a token id out of range) are RLX_ERR_INVALID, never a crash or a wild read.
rlx_status null_program_run(rlx_device* dev, rlx_program* prog, const rlx_binding* bindings,
                            uint32_t n_bindings, rlx_err err) {
  (void)dev;
  (void)prog;
  (void)bindings;
  (void)n_bindings;
  return guard(err, [&] { return unsupported(err, "program_run"); });
}

void null_program_free(rlx_device* dev, rlx_program* prog) {
  (void)dev;
  (void)prog;
}

// Designated initializers in declaration order; a field you leave out would be NULL and the
// host treats a NULL entry in a backend table as a broken plugin. constexpr: no load-time code.
constexpr rlx_backend_api kBackendApi = {
    .struct_size = sizeof(rlx_backend_api),
    .init = null_init,
    .shutdown = null_shutdown,
    .device_count = null_device_count,
    .device_info = null_device_info,
    .device_open = null_device_open,
    .device_close = null_device_close,
    .buffer_alloc = null_buffer_alloc,
    .buffer_free = null_buffer_free,
    .buffer_write = null_buffer_write,
    .buffer_read = null_buffer_read,
    .supports = null_supports,
    .program_compile = null_program_compile,
    .program_run = null_program_run,
    .program_free = null_program_free,
    .reserved = {},
};

// ---- the header ----------------------------------------------------------------------------

// How well this build fits this machine: 0 = cannot run here, higher wins among plugins of one
// name (the cpu backend's generic / avx2 / avx512 builds score 10 / 20 / 30). It runs before
// init(), on any machine, so it must be cheap, side-effect free, and built for the baseline
// ISA (test CPU features with __builtin_cpu_supports, not by executing them).
uint32_t null_score(void) { return 1; }

constexpr rlx_plugin_info kInfo = {
    .abi_major = RLX_ABI_MAJOR,
    .abi_minor = RLX_ABI_MINOR,
    .struct_size = sizeof(rlx_plugin_info),
    .kind = RLX_PLUGIN_BACKEND,
    .name = kName,
    .variant = "",  // "avx2", "sm90", ... when you ship several builds of one backend
    .version = "0.1.0",
    .description = "template backend: no devices, every operation unsupported",
    .score = null_score,
    .api = &kBackendApi,
    .reserved = {},
};

}  // namespace

// The one exported symbol (rule 2). Return the header even when host_abi_major differs from
// ours: its first fields (abi_major, abi_minor, struct_size) are what let the host refuse us
// with a message naming both versions. Do nothing else here - no allocation, no threads.
extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t host_abi_major) {
  (void)host_abi_major;
  return &kInfo;
}
