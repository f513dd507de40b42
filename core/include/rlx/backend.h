// C++ handles over a backend plugin's C table: devices, buffers and programs with RAII and
// errors turned into rlx::Error. Nothing here knows which backend it talks to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rlx/arena.h"
#include "rlx/plugin_abi.h"

namespace rlx {

class Device;

class Buffer {
 public:
  Buffer() = default;
  Buffer(std::shared_ptr<Device> dev, rlx_buffer* h, uint64_t bytes);
  ~Buffer();
  Buffer(Buffer&&) noexcept;
  Buffer& operator=(Buffer&&) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void write(uint64_t offset, const void* src, uint64_t bytes);
  void read(uint64_t offset, void* dst, uint64_t bytes) const;
  uint64_t size() const { return bytes_; }
  rlx_buffer* handle() const { return h_; }

 private:
  void release();
  std::shared_ptr<Device> dev_;
  rlx_buffer* h_ = nullptr;
  uint64_t bytes_ = 0;
};

class Program {
 public:
  Program() = default;
  Program(std::shared_ptr<Device> dev, rlx_program* h, uint32_t n_slots);
  ~Program();
  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // bindings[i] backs slot i of the planned graph.
  void run(std::span<const rlx_binding> bindings);
  uint32_t n_slots() const { return n_slots_; }

 private:
  void release();
  std::shared_ptr<Device> dev_;
  rlx_program* h_ = nullptr;
  uint32_t n_slots_ = 0;
};

// An open device. Always held by shared_ptr: buffers and programs keep it alive.
class Device : public std::enable_shared_from_this<Device> {
 public:
  Device(const rlx_backend_api* api, std::string backend, uint32_t index, rlx_device* h);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  Buffer alloc(uint64_t bytes);
  // A buffer over host memory without a copy, when the backend can (else nullopt). `ptr` must
  // outlive the buffer (weights straight from the mmap'd file).
  std::optional<Buffer> wrap_host(const void* ptr, uint64_t bytes);
  // Reads / writes `bytes` at `offset` of buffer `h` of this device (Buffer::read / write, and
  // callers that hold only a binding); throws naming the backend.
  void read(rlx_buffer* h, uint64_t offset, void* dst, uint64_t bytes) const;
  void write(rlx_buffer* h, uint64_t offset, const void* src, uint64_t bytes) const;
  bool supports(const PlannedGraph& g, uint32_t node) const;
  Program compile(const PlannedGraph& g);

  const std::string& backend() const { return backend_; }
  uint32_t index() const { return index_; }
  // The backend reports this device as a discrete or integrated GPU (rlx_device_info.type).
  bool is_gpu() const;
  const rlx_backend_api* api() const { return api_; }
  rlx_device* handle() const { return h_; }

 private:
  const rlx_backend_api* api_;
  std::string backend_;
  uint32_t index_;
  rlx_device* h_;
};

// Calls `fn(rlx_err)` and throws rlx::Error("<what>: <plugin message>") when it fails.
struct ErrBuf {
  char msg[1024] = {0};
  rlx_err err() { return rlx_err{msg, sizeof msg}; }
};
void check_status(rlx_status st, const ErrBuf& eb, std::string_view what);
const char* status_name(rlx_status st);

}  // namespace rlx
