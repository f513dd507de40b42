#include "buffer.h"

#include <atomic>

#include "device.h"
#include "error.h"

namespace rlx::vk {

namespace {
constinit std::atomic<uint64_t> g_next_serial{1};
}

Buffer::Buffer(Device& dev, uint64_t bytes, Kind kind) : dev_(dev.vk()), size_(bytes) {
  serial_ = g_next_serial.fetch_add(1, std::memory_order_relaxed);
  const uint64_t alloc = bytes < 16 ? 16 : (bytes + 15) / 16 * 16;
  if (alloc < bytes) fail(RLX_ERR_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes");
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = alloc;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = vkCreateBuffer(dev_, &bi, nullptr, &buf_);
  if (r != VK_SUCCESS) fail(RLX_ERR_OUT_OF_MEMORY, "vkCreateBuffer of ", bytes, " bytes failed");
  try {
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev_, buf_, &req);
    const bool host = kind == Kind::HostVisible;
    const VkMemoryPropertyFlags want =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
             : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const VkMemoryPropertyFlags need = host ? want : 0;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = dev.memory_type(req.memoryTypeBits, want, need);
    r = vkAllocateMemory(dev_, &ai, nullptr, &mem_);
    if (r != VK_SUCCESS)
      fail(RLX_ERR_OUT_OF_MEMORY, "cannot allocate ", bytes, " bytes of ",
           host ? "host-visible" : "device", " memory (", vk_result_name(r), ")");
    vk_check(vkBindBufferMemory(dev_, buf_, mem_, 0), "vkBindBufferMemory");
    if (host) vk_check(vkMapMemory(dev_, mem_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
  } catch (...) {
    if (mem_) vkFreeMemory(dev_, mem_, nullptr);
    vkDestroyBuffer(dev_, buf_, nullptr);
    throw;
  }
}

Buffer::~Buffer() {
  vkDestroyBuffer(dev_, buf_, nullptr);
  vkFreeMemory(dev_, mem_, nullptr);  // unmaps too
}

void Buffer::check_range(const char* what, uint64_t offset, uint64_t bytes, const void* ptr) const {
  if (offset > size_ || bytes > size_ - offset)
    fail(RLX_ERR_INVALID, what, " of ", bytes, " bytes at offset ", offset,
         " is out of bounds of a ", size_, "-byte buffer");
  if (bytes > 0 && ptr == nullptr)
    fail(RLX_ERR_INVALID, what, " of ", bytes, " bytes with a null pointer");
}

}  // namespace rlx::vk
