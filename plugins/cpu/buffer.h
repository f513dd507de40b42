// Device memory for the cpu backend: plain host memory, 64-byte aligned (a cache line, and the
// widest vector load), that knows its size so every access can be bounds-checked.
#pragma once

#include <cstdint>

namespace rlx::cpu {

class Buffer {
 public:
  static constexpr uint64_t kAlignment = 64;

  // Throws Error(RLX_ERR_OUT_OF_MEMORY) when the allocation fails. Contents start undefined.
  // `alignment` is a power of two; less than kAlignment is raised to it.
  explicit Buffer(uint64_t bytes, uint64_t alignment = kAlignment);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

  // Copy in / out; throws Error(RLX_ERR_INVALID) naming offset, bytes and size when
  // [offset, offset + bytes) is not inside the buffer.
  void write(uint64_t offset, const void* src, uint64_t bytes);
  void read(uint64_t offset, void* dst, uint64_t bytes) const;

 private:
  void check_range(const char* what, uint64_t offset, uint64_t bytes, const void* ptr) const;

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t alignment_ = kAlignment;
};

}  // namespace rlx::cpu
