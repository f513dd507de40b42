// Device memory for the cuda backend: one cudaMalloc allocation. The host never maps it:
// buffer_write / buffer_read are copies on the device's stream (Device::write / read).
#pragma once

#include <cstdint>

namespace rlx::gpu {

class Buffer {
 public:
  // Throws Error(RLX_ERR_OUT_OF_MEMORY) when the device cannot allocate. A zero-byte buffer
  // still gets 256 bytes so that it has an address. Contents start undefined.
  explicit Buffer(uint64_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  char* ptr() const { return ptr_; }
  uint64_t size() const { return size_; }  // what was asked for (bounds checks use this)

  // Throws Error(RLX_ERR_INVALID) naming offset, bytes and size when [offset, offset + bytes)
  // is not inside the buffer.
  void check_range(const char* what, uint64_t offset, uint64_t bytes, const void* host) const;

 private:
  char* ptr_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace rlx::gpu
