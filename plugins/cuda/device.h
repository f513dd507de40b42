// Devices of the cuda backend: every device the runtime reports is `cuda:N`. An open Device
// owns one non-blocking stream (every copy and program runs on it, serialized by a mutex, so
// programs may be run from several host threads), and every buffer and program made on it.
// Weights are ordinary buffers the host uploads once and binds to every program's slots.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "gpu.h"
#include "kernels/kernels.h"
#include "../common/handles.h"
#include "rlx/plugin_abi.h"

namespace rlx::gpu {

class Buffer;
class Program;

class Device {
 public:
  explicit Device(int ordinal);
  ~Device();  // synchronizes, frees programs, buffers and the stream
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const cudaDeviceProp& props() const { return props_; }
  const Caps& caps() const { return caps_; }
  cudaStream_t stream() const { return stream_; }
  // Makes this device current on the calling host thread (every entry point calls it: the host
  // may call from any thread).
  void activate() const;
  // Held while work is enqueued on the stream and waited for.
  std::mutex& stream_mutex() { return stream_mu_; }

  Buffer* alloc_buffer(uint64_t bytes);
  void free_buffer(Buffer* b);  // ignores handles this device did not make
  Buffer& buffer(const rlx_buffer* h) const;
  // Host <-> device copies on the stream; bounds-checked; synchronous.
  void write(Buffer& b, uint64_t offset, const void* src, uint64_t bytes);
  void read(Buffer& b, uint64_t offset, void* dst, uint64_t bytes);

  Program* add_program(std::unique_ptr<Program> p);
  void free_program(Program* p);
  Program& program(const rlx_program* h) const;

 private:
  int ordinal_;
  cudaDeviceProp props_{};
  Caps caps_;
  cudaStream_t stream_ = nullptr;
  std::mutex stream_mu_;

  plugin::HandleMap<Buffer> buffers_;    // named in the constructor (in device.cpp, where
  plugin::HandleMap<Program> programs_;  // Program is a complete type)
};

// ---- the plugin-wide device table ----------------------------------------------------------

// Throws Error(RLX_ERR_NO_DEVICE, why) (the host prints "unavailable: ...") when the runtime
// finds no driver or no device.
uint32_t device_count();
void device_info(uint32_t index, rlx_device_info* out);
Device* open_device(uint32_t index, const rlx_device_options* opts);
void close_device(Device* dev);
Device& checked_device(const rlx_device* h);
void close_all_devices();  // shutdown

inline rlx_device* to_handle(Device* d) { return reinterpret_cast<rlx_device*>(d); }
inline rlx_buffer* to_handle(Buffer* b) { return reinterpret_cast<rlx_buffer*>(b); }
inline rlx_program* to_handle(Program* p) { return reinterpret_cast<rlx_program*>(p); }

}  // namespace rlx::gpu
