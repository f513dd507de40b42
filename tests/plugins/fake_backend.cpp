// A configurable fake backend, compiled once per broken (or working) variant the plugin-host
// tests need. Each build is a real shared object; the FAKE_* definitions choose how it is broken.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rlx/plugin_abi.h"

#ifndef FAKE_NAME
#define FAKE_NAME "fake"
#endif
#ifndef FAKE_VARIANT
#define FAKE_VARIANT ""
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR RLX_ABI_MAJOR
#endif
#ifndef FAKE_STRUCT_SIZE
#define FAKE_STRUCT_SIZE sizeof(rlx_plugin_info)
#endif
#ifndef FAKE_SCORE
#define FAKE_SCORE 1
#endif

#ifdef FAKE_MISSING_DEP
// Defined in a helper library that the loader cannot find at run time.
extern "C" int rlx_test_missing_dependency(void);
#endif

namespace {

void set_err(rlx_err err, const char* msg) {
  if (err.msg && err.cap) std::snprintf(err.msg, err.cap, "%s", msg);
}

#ifdef FAKE_REGISTER_OP
// Shape inference for "<name>.twice": the output is like input 0; f32 only.
rlx_status infer_twice(const rlx_tensor_desc* in, uint32_t, const int64_t*, const float*,
                       rlx_tensor_desc* out, rlx_err err) {
  if (in[0].dtype != RLX_F32) {
    set_err(err, "twice takes f32 only");
    return RLX_ERR_INVALID;
  }
  *out = in[0];
  return RLX_OK;
}

rlx_status init(const rlx_host_api* host, rlx_err err) {
  rlx_op_decl decl = {sizeof(rlx_op_decl), FAKE_NAME ".twice", 1, 1, true, infer_twice, {}};
  uint32_t id = 0;
  return host->register_op(&decl, &id, err);
}
#elif defined(FAKE_CRASH_IN_INIT)
rlx_status init(const rlx_host_api*, rlx_err) {
  std::raise(SIGSEGV);  // as a bad pointer would (a real null store is UB the sanitizers flag)
  return RLX_OK;
}
#else
rlx_status init(const rlx_host_api*, rlx_err) { return RLX_OK; }
#endif
#ifdef FAKE_CRASH_ON_LOAD
// A static constructor that aborts: the crash happens inside dlopen itself.
const int kAbortOnLoad = (std::abort(), 0);
#endif
void shutdown() {}

rlx_status device_count(uint32_t* n, rlx_err err) {
#ifdef FAKE_HANG_IN_PROBE
  for (;;) pause();  // a driver call that never returns
#endif
#ifdef FAKE_PROBE_ERROR
  *n = 0;
  set_err(err, "simulated driver failure: device node /dev/fake0 is not readable");
  return RLX_ERR_NO_DEVICE;
#else
  (void)err;
  *n = 1;
  return RLX_OK;
#endif
}

rlx_status device_info(uint32_t, rlx_device_info* out, rlx_err) {
  std::snprintf(out->name, sizeof out->name, "fake device (%s)", FAKE_NAME);
  std::snprintf(out->capabilities, sizeof out->capabilities, "none");
  out->type = RLX_DEVICE_VIRTUAL;
  return RLX_OK;
}

rlx_status unsupported(rlx_err err) {
  set_err(err, "the fake backend computes nothing");
  return RLX_ERR_UNSUPPORTED;
}
rlx_status device_open(uint32_t, const rlx_device_options*, rlx_device**, rlx_err e) {
  return unsupported(e);
}
void device_close(rlx_device*) {}
rlx_status buffer_alloc(rlx_device*, uint64_t, rlx_buffer**, rlx_err e) { return unsupported(e); }
void buffer_free(rlx_device*, rlx_buffer*) {}
rlx_status buffer_write(rlx_device*, rlx_buffer*, uint64_t, const void*, uint64_t, rlx_err e) {
  return unsupported(e);
}
rlx_status buffer_read(rlx_device*, rlx_buffer*, uint64_t, void*, uint64_t, rlx_err e) {
  return unsupported(e);
}
bool supports(rlx_device*, const rlx_graph_desc*, uint32_t) { return false; }
rlx_status program_compile(rlx_device*, const rlx_graph_desc*, rlx_program**, rlx_err e) {
  return unsupported(e);
}
rlx_status program_run(rlx_device*, rlx_program*, const rlx_binding*, uint32_t, rlx_err e) {
  return unsupported(e);
}
void program_free(rlx_device*, rlx_program*) {}

uint32_t score() {
#ifdef FAKE_MISSING_DEP
  return rlx_test_missing_dependency() ? 1u : 1u;
#else
  return FAKE_SCORE;
#endif
}

const rlx_backend_api kApi = {sizeof(rlx_backend_api),
                              init,
                              shutdown,
                              device_count,
                              device_info,
                              device_open,
                              device_close,
                              buffer_alloc,
                              buffer_free,
                              buffer_write,
                              buffer_read,
                              supports,
                              program_compile,
                              program_run,
                              program_free,
                              {}};

const rlx_plugin_info kInfo = {FAKE_ABI_MAJOR,
                               RLX_ABI_MINOR,
                               static_cast<uint32_t>(FAKE_STRUCT_SIZE),
                               RLX_PLUGIN_BACKEND,
                               FAKE_NAME,
                               FAKE_VARIANT,
                               "0.0.1",
                               "fake backend for plugin-host tests",
                               score,
                               &kApi,
                               {}};

}  // namespace

#ifdef FAKE_NO_SYMBOL
extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query_misspelled(uint32_t) {
  return &kInfo;
}
#else
extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t) { return &kInfo; }
#endif
