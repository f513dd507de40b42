#include "device.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "buffer.h"
#include "error.h"
#include "program.h"

namespace rlx::vk {

const char* vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult (other)";
  }
}

namespace {

// Staging chunk: big enough to amortize a submit, small enough to stay cheap to keep.
constexpr uint64_t kStagingBytes = 16ull << 20;

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

std::string version_str(uint32_t v) {
  return cat(VK_API_VERSION_MAJOR(v), ".", VK_API_VERSION_MINOR(v), ".", VK_API_VERSION_PATCH(v));
}

// The instance and its physical devices; like the cpu backend, nothing here has an exit-time
// destructor: created on first use, destroyed by close_all_devices() (shutdown).
constinit std::mutex g_mu;
constinit VkInstance g_instance = VK_NULL_HANDLE;                  // guarded by g_mu
constinit std::vector<VkPhysicalDevice>* g_phys = nullptr;         // guarded by g_mu
constinit plugin::DeviceList<Device> g_devices;  // its own lock
static_assert(std::is_trivially_destructible_v<std::mutex>);

// Caller holds g_mu. Throws RLX_ERR_NO_DEVICE "unavailable: ..." when Vulkan cannot be used.
const std::vector<VkPhysicalDevice>& physical_devices_locked() {
  if (g_phys) return *g_phys;
  if (!g_instance) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "rlx";
    app.pEngineName = "rlx";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkResult r = vkCreateInstance(&ci, nullptr, &g_instance);
    if (r != VK_SUCCESS) {
      g_instance = VK_NULL_HANDLE;
      fail(RLX_ERR_NO_DEVICE, "vkCreateInstance failed (", vk_result_name(r),
           "): no Vulkan driver (ICD) is installed or it does not support Vulkan 1.2");
    }
  }
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(g_instance, &n, nullptr);
  if (r != VK_SUCCESS)
    fail(RLX_ERR_NO_DEVICE, "vkEnumeratePhysicalDevices failed (", vk_result_name(r), ")");
  auto list = std::make_unique<std::vector<VkPhysicalDevice>>(n);
  if (n)
    vk_check(vkEnumeratePhysicalDevices(g_instance, &n, list->data()),
             "vkEnumeratePhysicalDevices");
  list->resize(n);
  if (n == 0) fail(RLX_ERR_NO_DEVICE, "the Vulkan loader found no physical device");
  g_phys = list.release();
  return *g_phys;
}

VkPhysicalDevice physical(uint32_t index) {
  std::lock_guard lk(g_mu);
  const auto& list = physical_devices_locked();
  if (index >= list.size())
    fail(RLX_ERR_INVALID, "device index ", index, " out of range (vulkan has ", list.size(),
         " device", list.size() == 1 ? "" : "s", ")");
  return list[index];
}

}  // namespace

void full_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

// ---- Device ---------------------------------------------------------------------------------

Device::Device(VkPhysicalDevice phys) : phys_(phys), buffers_("buffer"), programs_("program") {
  vkGetPhysicalDeviceProperties(phys_, &props_);
  vkGetPhysicalDeviceMemoryProperties(phys_, &mem_props_);
  if (props_.apiVersion < VK_API_VERSION_1_2)
    fail(RLX_ERR_UNSUPPORTED, props_.deviceName, " supports Vulkan ",
         version_str(props_.apiVersion), "; the vulkan backend needs 1.2 (SPIR-V 1.5 shaders)");
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys_, &nq, qf.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i)
    if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family_ = i, found = true;
  if (!found) fail(RLX_ERR_UNSUPPORTED, props_.deviceName, " has no compute queue");

  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  VkPhysicalDeviceFeatures supported{};
  vkGetPhysicalDeviceFeatures(phys_, &supported);
  VkPhysicalDeviceFeatures enabled{};
  enabled.shaderFloat64 = supported.shaderFloat64;
  f64_ = supported.shaderFloat64 == VK_TRUE;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pEnabledFeatures = &enabled;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  vk_check(vkCreateDevice(phys_, &di, nullptr, &dev_), "vkCreateDevice");
  try {
    vkGetDeviceQueue(dev_, family_, 0, &queue_);

    VkDescriptorSetLayoutBinding b[kBindings] = {};
    for (uint32_t i = 0; i < kBindings; ++i) {
      b[i].binding = i;
      b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      b[i].descriptorCount = 1;
      b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = kBindings;
    li.pBindings = b;
    vk_check(vkCreateDescriptorSetLayout(dev_, &li, nullptr, &set_layout_),
             "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Push)};
    VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &set_layout_;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pr;
    vk_check(vkCreatePipelineLayout(dev_, &pli, nullptr, &pipe_layout_), "vkCreatePipelineLayout");

    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = family_;
    vk_check(vkCreateCommandPool(dev_, &pi, nullptr, &xfer_pool_), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = xfer_pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    vk_check(vkAllocateCommandBuffers(dev_, &ai, &xfer_cmd_), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk_check(vkCreateFence(dev_, &fi, nullptr, &xfer_fence_), "vkCreateFence");
    staging_ = std::make_unique<Buffer>(*this, kStagingBytes, Buffer::Kind::HostVisible);
  } catch (...) {
    release();  // what was created so far
    throw;
  }
}

Device::~Device() { release(); }

void Device::release() {
  if (!dev_) return;
  vkDeviceWaitIdle(dev_);
  programs_.clear();
  buffers_.clear();
  staging_.reset();
  for (VkPipeline p : pipelines_)
    if (p) vkDestroyPipeline(dev_, p, nullptr);
  for (VkShaderModule m : modules_)
    if (m) vkDestroyShaderModule(dev_, m, nullptr);
  if (xfer_fence_) vkDestroyFence(dev_, xfer_fence_, nullptr);
  if (xfer_pool_) vkDestroyCommandPool(dev_, xfer_pool_, nullptr);
  if (pipe_layout_) vkDestroyPipelineLayout(dev_, pipe_layout_, nullptr);
  if (set_layout_) vkDestroyDescriptorSetLayout(dev_, set_layout_, nullptr);
  vkDestroyDevice(dev_, nullptr);
  dev_ = VK_NULL_HANDLE;
}

VkPipeline Device::pipeline(Kernel k) {
  std::lock_guard lk(pipe_mu_);
  if (pipelines_[k]) return pipelines_[k];
  size_t bytes = 0;
  const uint32_t* code = kernel_spirv(k, &bytes);
  if (!modules_[k]) {
    VkShaderModuleCreateInfo si{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    si.codeSize = bytes;
    si.pCode = code;
    vk_check(vkCreateShaderModule(dev_, &si, nullptr, &modules_[k]),
             cat("vkCreateShaderModule (", kernel_name(k), ")").c_str());
  }
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = modules_[k];
  ci.stage.pName = "main";
  ci.layout = pipe_layout_;
  vk_check(vkCreateComputePipelines(dev_, VK_NULL_HANDLE, 1, &ci, nullptr, &pipelines_[k]),
           cat("vkCreateComputePipelines (", kernel_name(k), ")").c_str());
  return pipelines_[k];
}

uint32_t Device::memory_type(uint32_t bits, VkMemoryPropertyFlags want,
                             VkMemoryPropertyFlags need) const {
  for (VkMemoryPropertyFlags f : {want, need})
    for (uint32_t i = 0; i < mem_props_.memoryTypeCount; ++i)
      if ((bits & (1u << i)) && (mem_props_.memoryTypes[i].propertyFlags & f) == f) return i;
  fail(RLX_ERR_OUT_OF_MEMORY, "no Vulkan memory type fits (allowed type mask ", bits, ")");
}

void Device::submit(VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  std::lock_guard lk(queue_mu_);
  vk_check(vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit");
}

Buffer* Device::alloc_buffer(uint64_t bytes) {
  return buffers_.add(std::make_unique<Buffer>(*this, bytes));
}

// Every submit is waited for before it returns, so nothing in flight can use it now.
void Device::free_buffer(Buffer* b) { buffers_.take(b); }

Buffer& Device::buffer(const rlx_buffer* h) const { return buffers_.get(h); }

// One chunk: staging <-> b, recorded, submitted and waited for, under queue_mu_ (the staging
// buffer and the transfer command buffer are shared).
void Device::copy(Buffer& b, uint64_t offset, uint64_t bytes, bool to_device) {
  vk_check(vkResetCommandBuffer(xfer_cmd_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(xfer_cmd_, &bi), "vkBeginCommandBuffer");
  full_barrier(xfer_cmd_);  // earlier programs' writes are visible to the copy
  VkBufferCopy region{};
  region.size = bytes;
  if (to_device) {
    region.dstOffset = offset;
    vkCmdCopyBuffer(xfer_cmd_, staging_->vk(), b.vk(), 1, &region);
  } else {
    region.srcOffset = offset;
    vkCmdCopyBuffer(xfer_cmd_, b.vk(), staging_->vk(), 1, &region);
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(xfer_cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                         1, &mb, 0, nullptr, 0, nullptr);
  }
  vk_check(vkEndCommandBuffer(xfer_cmd_), "vkEndCommandBuffer");
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &xfer_cmd_;
  vk_check(vkResetFences(dev_, 1, &xfer_fence_), "vkResetFences");
  vk_check(vkQueueSubmit(queue_, 1, &si, xfer_fence_), "vkQueueSubmit");
  vk_check(vkWaitForFences(dev_, 1, &xfer_fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void Device::write(Buffer& b, uint64_t offset, const void* src, uint64_t bytes) {
  b.check_range("write", offset, bytes, src);
  std::lock_guard lk(queue_mu_);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, kStagingBytes);
    std::memcpy(staging_->mapped(), static_cast<const uint8_t*>(src) + done, n);
    copy(b, offset + done, n, true);
    done += n;
  }
}

void Device::read(Buffer& b, uint64_t offset, void* dst, uint64_t bytes) {
  b.check_range("read", offset, bytes, dst);
  std::lock_guard lk(queue_mu_);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, kStagingBytes);
    copy(b, offset + done, n, false);
    std::memcpy(static_cast<uint8_t*>(dst) + done, staging_->mapped(), n);
    done += n;
  }
}

Program* Device::add_program(std::unique_ptr<Program> p) { return programs_.add(std::move(p)); }

void Device::free_program(Program* p) { programs_.take(p); }

Program& Device::program(const rlx_program* h) const { return programs_.get(h); }

// ---- the device table -------------------------------------------------------------------------

uint32_t device_count() {
  std::lock_guard lk(g_mu);
  return static_cast<uint32_t>(physical_devices_locked().size());
}

void device_info(uint32_t index, rlx_device_info* out) {
  if (!out) fail(RLX_ERR_INVALID, "device_info: null output");
  VkPhysicalDevice phys = physical(index);
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(phys, &props);
  const bool v12 = props.apiVersion >= VK_API_VERSION_1_2;
  if (v12) {
    drv.pNext = &sub;
    p2.pNext = &drv;
    vkGetPhysicalDeviceProperties2(phys, &p2);
  }
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(phys, &mem);

  rlx_device_info info{};
  info.struct_size = sizeof info;
  switch (props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info.type = RLX_DEVICE_DISCRETE_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info.type = RLX_DEVICE_INTEGRATED_GPU; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info.type = RLX_DEVICE_VIRTUAL; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info.type = RLX_DEVICE_CPU; break;
    default: info.type = RLX_DEVICE_OTHER; break;
  }
  copy_str(info.name, sizeof info.name, props.deviceName);
  std::string driver =
      v12 ? cat(drv.driverName, " ", drv.driverInfo) : cat("driver version ", props.driverVersion);
  copy_str(info.driver, sizeof info.driver, driver);
  // Device-local heaps are what a program's arena and the weights live in.
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.memory_total += mem.memoryHeaps[h].size;
  info.memory_free = 0;  // unknown without VK_EXT_memory_budget
  std::string caps = cat("f32 i32 vulkan=", version_str(props.apiVersion),
                         " max_wg=", props.limits.maxComputeWorkGroupInvocations,
                         " shared=", props.limits.maxComputeSharedMemorySize);
  if (v12) caps += cat(" subgroup=", sub.subgroupSize);
  if (!v12) caps += " unusable(needs-vulkan-1.2)";
  copy_str(info.capabilities, sizeof info.capabilities, caps);
  size_t cap =
      out->struct_size == 0 ? sizeof info : std::min<size_t>(out->struct_size, sizeof info);
  info.struct_size = static_cast<uint32_t>(cap);
  std::memcpy(out, &info, cap);
}

Device* open_device(uint32_t index, const rlx_device_options* opts) {
  (void)opts;  // n_threads means nothing to a GPU queue
  VkPhysicalDevice phys = physical(index);
  return g_devices.add(std::make_unique<Device>(phys));
}

void close_device(Device* dev) { g_devices.close(dev); }

Device& checked_device(const rlx_device* h) { return g_devices.checked(h); }

void close_all_devices() {
  g_devices.close_all();  // each ~Device waits for its queue and frees everything on it
  std::lock_guard lk(g_mu);
  delete g_phys;
  g_phys = nullptr;
  if (g_instance) vkDestroyInstance(g_instance, nullptr);
  g_instance = VK_NULL_HANDLE;
}

}  // namespace rlx::vk
