// Device memory for the vulkan backend: one VkBuffer (storage + transfer src/dst) bound to its
// own VkDeviceMemory, device-local where the device has such memory. The host never maps it:
// buffer_write / buffer_read go through the device's staging buffer (Device::write / read).
// A host-visible variant (mapped, coherent) is used for staging and for programs' error words.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

namespace rlx::vk {

class Device;

class Buffer {
 public:
  enum class Kind { DeviceLocal, HostVisible };
  // Throws Error(RLX_ERR_OUT_OF_MEMORY) when the device cannot allocate. A zero-byte buffer
  // still gets 16 bytes so it can be bound. Contents start undefined.
  Buffer(Device& dev, uint64_t bytes, Kind kind = Kind::DeviceLocal);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer vk() const { return buf_; }
  uint64_t size() const { return size_; }   // what was asked for (bounds checks use this)
  void* mapped() const { return mapped_; }  // HostVisible only, else null
  // Unique per buffer for the plugin's lifetime (programs compare it to see whether a slot's
  // binding changed: a VkBuffer handle value may be reused after a free).
  uint64_t serial() const { return serial_; }

  // Throws Error(RLX_ERR_INVALID) naming offset, bytes and size when [offset, offset + bytes)
  // is not inside the buffer.
  void check_range(const char* what, uint64_t offset, uint64_t bytes, const void* ptr) const;

 private:
  VkDevice dev_ = VK_NULL_HANDLE;
  VkBuffer buf_ = VK_NULL_HANDLE;
  VkDeviceMemory mem_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  void* mapped_ = nullptr;
  uint64_t serial_ = 0;
};

}  // namespace rlx::vk
