// The cpu device: exactly one (index 0), the host's cores and RAM. An open Device owns the
// thread pool every kernel runs on, and every buffer and program created on it, so closing it
// (or the plugin's shutdown) frees all of them and joins every thread the plugin started.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../common/handles.h"
#include "rlx/plugin_abi.h"
#include "kernels/kernels.h"
#include "thread_pool.h"

// The build variant ("generic", "avx2", "avx512"), set per target by CMakeLists.txt.
#ifndef RLX_CPU_VARIANT
#define RLX_CPU_VARIANT "generic"
#endif

namespace rlx::cpu {

class Buffer;
class Program;

class Device {
 public:
  explicit Device(int n_threads);
  ~Device();  // frees buffers and programs still alive, joins the pool
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ThreadPool& pool() { return pool_; }
  Scratch& scratch() { return scratch_; }  // for kernels; runs on a device are serialized
  // Quantized matmuls quantize x to 8 bits and use integer dot products (kernels/qdot.cpp),
  // as llama.cpp does; RLX_CPU_QUANT_ACT=f32 keeps x in f32 (exact, slower).
  bool quantize_activations() const { return q8_act_; }

  Buffer* alloc_buffer(uint64_t bytes);
  Buffer* wrap_host(const void* host, uint64_t bytes);  // read-only, never freed here
  void free_buffer(Buffer* b);                          // ignores handles this device did not make
  // The live buffer behind a handle; throws Error(RLX_ERR_INVALID) for an unknown or freed one.
  Buffer& buffer(const rlx_buffer* h) const;

  Program* add_program(std::unique_ptr<Program> p);
  void free_program(Program* p);
  Program& program(const rlx_program* h) const;

 private:
  ThreadPool pool_;
  Scratch scratch_;
  bool q8_act_ = true;
  plugin::HandleMap<Buffer> buffers_;    // named in the constructor (in device.cpp, where
  plugin::HandleMap<Program> programs_;  // Program is a complete type)
};

// ---- the plugin-wide device table ----------------------------------------------------------

uint32_t device_count();  // always 1
// Fills `out` up to out->struct_size bytes (0 = this build's size). Throws for index != 0.
void device_info(uint32_t index, rlx_device_info* out);
// opts may be null; opts->n_threads == 0 means std::thread::hardware_concurrency().
Device* open_device(uint32_t index, const rlx_device_options* opts);
void close_device(Device* dev);               // ignores unknown handles
Device& checked_device(const rlx_device* h);  // throws Error(RLX_ERR_INVALID) if not open
void close_all_devices();                     // shutdown: frees everything, joins every thread

// Handle casts: the opaque ABI handles are the C++ objects' addresses.
inline rlx_device* to_handle(Device* d) { return reinterpret_cast<rlx_device*>(d); }
inline rlx_buffer* to_handle(Buffer* b) { return reinterpret_cast<rlx_buffer*>(b); }
inline rlx_program* to_handle(Program* p) { return reinterpret_cast<rlx_program*>(p); }

}  // namespace rlx::cpu
