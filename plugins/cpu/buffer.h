// Device memory for the cpu backend: plain host memory, 64-byte aligned (a cache line, and the
// widest vector load), that knows its size so every access can be bounds-checked. Or a
// read-only view of host memory the host owns (buffer_from_host: weights in an mmap'd file),
// which is never written or freed here.
#pragma once

#include <cstdint>

namespace rlx::cpu {

class Buffer {
 public:
  static constexpr uint64_t kAlignment = 64;

  // Throws Error(RLX_ERR_OUT_OF_MEMORY) when the allocation fails. Contents start undefined.
  // `alignment` is a power of two; less than kAlignment is raised to it.
  explicit Buffer(uint64_t bytes, uint64_t alignment = kAlignment);
  // Wraps `bytes` of host memory at `host` without copying; the caller keeps it valid and
  // unchanged until this Buffer is destroyed, which does not free it. Any alignment.
  struct WrapHost {};
  Buffer(WrapHost, const void* host, uint64_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // For a wrapped buffer this is the host's const memory: only kernel inputs may read it (a
  // program refuses to bind it to a slot it writes, see Program::run).
  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  bool read_only() const { return !owned_; }

  // Copy in / out; throws Error(RLX_ERR_INVALID) naming offset, bytes and size when
  // [offset, offset + bytes) is not inside the buffer, and for a write to a wrapped buffer.
  void write(uint64_t offset, const void* src, uint64_t bytes);
  void read(uint64_t offset, void* dst, uint64_t bytes) const;

 private:
  void check_range(const char* what, uint64_t offset, uint64_t bytes, const void* ptr) const;

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t alignment_ = kAlignment;
  bool owned_ = true;  // false: wraps host memory (read-only, not freed)
};

}  // namespace rlx::cpu
