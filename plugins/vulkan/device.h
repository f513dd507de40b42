// Vulkan devices: every physical device the loader reports is `vulkan:N`. An open Device owns a
// VkDevice with one compute queue, the descriptor-set and pipeline layouts every kernel shares,
// the pipelines (created on first use, then cached for the device's lifetime), a staging buffer
// for buffer_write / buffer_read, and every buffer and program created on it.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernels/kernels.h"
#include "../common/handles.h"
#include "rlx/plugin_abi.h"

namespace rlx::vk {

class Buffer;
class Program;

class Device {
 public:
  explicit Device(VkPhysicalDevice phys);
  ~Device();  // waits for the queue, frees programs, buffers, pipelines, the VkDevice
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  VkDevice vk() const { return dev_; }
  const VkPhysicalDeviceProperties& props() const { return props_; }
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout pipeline_layout() const { return pipe_layout_; }
  uint32_t queue_family() const { return family_; }
  // shaderFloat64 is supported (and enabled): rope computes its angles in double.
  bool has_f64() const { return f64_; }
  // The compute pipeline for `k`, created on first use and cached. Thread-safe.
  VkPipeline pipeline(Kernel k);
  // A memory type index allowed by `bits`: one with all of `want` if any, else one with all of
  // `need`; throws Error(RLX_ERR_OUT_OF_MEMORY) when none fits.
  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags need) const;
  // Submits one command buffer on the queue (serialized: programs may run from several threads).
  void submit(VkCommandBuffer cmd, VkFence fence);

  Buffer* alloc_buffer(uint64_t bytes);
  void free_buffer(Buffer* b);  // ignores handles this device did not make
  Buffer& buffer(const rlx_buffer* h) const;
  // Host <-> device copies through the staging buffer, in chunks; bounds-checked. Synchronous.
  void write(Buffer& b, uint64_t offset, const void* src, uint64_t bytes);
  void read(Buffer& b, uint64_t offset, void* dst, uint64_t bytes);

  Program* add_program(std::unique_ptr<Program> p);
  void free_program(Program* p);
  Program& program(const rlx_program* h) const;

 private:
  void copy(Buffer& b, uint64_t offset, uint64_t bytes, bool to_device);
  void release();  // destroys everything; safe to call twice (the destructor, a failed ctor)

  VkPhysicalDevice phys_;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties mem_props_{};
  VkDevice dev_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  bool f64_ = false;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipe_layout_ = VK_NULL_HANDLE;
  std::mutex pipe_mu_;
  std::array<VkShaderModule, kKernelCount> modules_{};
  std::array<VkPipeline, kKernelCount> pipelines_{};

  std::mutex queue_mu_;  // the queue, and the transfer pool / command buffer / fence / staging
  VkCommandPool xfer_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer xfer_cmd_ = VK_NULL_HANDLE;
  VkFence xfer_fence_ = VK_NULL_HANDLE;
  std::unique_ptr<Buffer> staging_;

  plugin::HandleMap<Buffer> buffers_;    // named in the constructor (in device.cpp, where
  plugin::HandleMap<Program> programs_;  // Program is a complete type)
};

// Records a global memory barrier: every earlier command's writes (compute or transfer) are
// visible to every later command's reads and writes. Programs begin with one, and put one
// between dependent dispatches.
void full_barrier(VkCommandBuffer cmd);

// ---- the plugin-wide device table ----------------------------------------------------------

// Creates the VkInstance on first call. Throws Error(RLX_ERR_NO_DEVICE, why) (the host prints
// it as "unavailable: ...")
// when there is no Vulkan loader / driver or no physical device.
uint32_t device_count();
void device_info(uint32_t index, rlx_device_info* out);
Device* open_device(uint32_t index, const rlx_device_options* opts);
void close_device(Device* dev);
Device& checked_device(const rlx_device* h);
void close_all_devices();  // shutdown: devices, then the instance

inline rlx_device* to_handle(Device* d) { return reinterpret_cast<rlx_device*>(d); }
inline rlx_buffer* to_handle(Buffer* b) { return reinterpret_cast<rlx_buffer*>(b); }
inline rlx_program* to_handle(Program* p) { return reinterpret_cast<rlx_program*>(p); }

}  // namespace rlx::vk
