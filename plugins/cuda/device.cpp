#include "device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "buffer.h"
#include "error.h"
#include "program.h"

namespace rlx::gpu {

namespace {

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

// The open devices; no exit-time destructor (close_all_devices() frees them at shutdown).
constinit plugin::DeviceList<Device> g_devices;
static_assert(std::is_trivially_destructible_v<plugin::DeviceList<Device>>);

int checked_ordinal(uint32_t index) {
  const uint32_t n = device_count();
  if (index >= n)
    fail(RLX_ERR_INVALID, RLX_GPU_NAME, ":", index, " does not exist: ", n, " device",
         n == 1 ? "" : "s", " found");
  return static_cast<int>(index);
}

std::string version_str(int v) { return cat(v / 1000, ".", v % 1000 / 10); }

}  // namespace

// ---- Device -------------------------------------------------------------------------------

Device::Device(int ordinal) : ordinal_(ordinal), buffers_("buffer"), programs_("program") {
  activate();
  cuda_check(cudaGetDeviceProperties(&props_, ordinal_), "cudaGetDeviceProperties");
  caps_.warp = props_.warpSize;
  caps_.sm_count = std::max(1, props_.multiProcessorCount);
#if defined(RLX_GPU_HIP)
  caps_.tensor_cores = false;  // the HIP build has the SIMT GEMM only
#else
  caps_.tensor_cores = props_.major >= 7 && !env_is("RLX_CUDA_TENSOR_CORES", "0");
#endif
  caps_.int8_act = !env_is("RLX_CUDA_QUANT_ACT", "f32");
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");
}

Device::~Device() {
  (void)cudaSetDevice(ordinal_);  // not activate(): a destructor must not throw
  if (stream_) (void)cudaStreamSynchronize(stream_);
  programs_.clear();
  buffers_.clear();
  if (stream_) (void)cudaStreamDestroy(stream_);
}

void Device::activate() const { cuda_check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

Buffer* Device::alloc_buffer(uint64_t bytes) {
  activate();
  return buffers_.add(std::make_unique<Buffer>(bytes));
}

void Device::free_buffer(Buffer* b) {
  std::unique_ptr<Buffer> dead = buffers_.take(b);
  if (!dead) return;
  activate();
  std::lock_guard lk(stream_mu_);  // cudaFree waits for work in flight; nothing may be queued
  (void)cudaStreamSynchronize(stream_);
}

Buffer& Device::buffer(const rlx_buffer* h) const { return buffers_.get(h); }

void Device::write(Buffer& b, uint64_t offset, const void* src, uint64_t bytes) {
  b.check_range("buffer_write", offset, bytes, src);
  if (!bytes) return;
  activate();
  std::lock_guard lk(stream_mu_);
  cuda_check(cudaMemcpyAsync(b.ptr() + offset, src, bytes, cudaMemcpyHostToDevice, stream_),
             "cudaMemcpyAsync (host to device)");
  cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void Device::read(Buffer& b, uint64_t offset, void* dst, uint64_t bytes) {
  b.check_range("buffer_read", offset, bytes, dst);
  if (!bytes) return;
  activate();
  std::lock_guard lk(stream_mu_);
  cuda_check(cudaMemcpyAsync(dst, b.ptr() + offset, bytes, cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync (device to host)");
  cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

Program* Device::add_program(std::unique_ptr<Program> p) { return programs_.add(std::move(p)); }

void Device::free_program(Program* p) { programs_.take(p); }

Program& Device::program(const rlx_program* h) const { return programs_.get(h); }

// ---- the device table -------------------------------------------------------------------------

uint32_t device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    // No driver, no device, or a driver older than the runtime: the host prints this as the
    // plugin's "unavailable: ..." line.
    fail(RLX_ERR_NO_DEVICE, "no ", RLX_GPU_RUNTIME, " device: ", cudaGetErrorName(e), " (",
         cudaGetErrorString(e), ")");
  }
  return static_cast<uint32_t>(n);
}

void device_info(uint32_t index, rlx_device_info* out) {
  if (!out) fail(RLX_ERR_INVALID, "device_info: null output");
  const int ordinal = checked_ordinal(index);
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
  rlx_device_info info{};
  info.struct_size = sizeof info;
#if defined(RLX_GPU_EMU)
  info.type = RLX_DEVICE_VIRTUAL;
#else
  info.type = RLX_DEVICE_DISCRETE_GPU;
#endif
  copy_str(info.name, sizeof info.name, p.name);
  int drv = 0, rt = 0;
  (void)cudaDriverGetVersion(&drv);
  (void)cudaRuntimeGetVersion(&rt);
  copy_str(info.driver, sizeof info.driver,
           cat(RLX_GPU_RUNTIME, " driver ", version_str(drv), ", runtime ", version_str(rt)));
  info.memory_total = p.totalGlobalMem;
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(ordinal) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
    info.memory_free = free_b;
  (void)cudaGetLastError();
#if defined(RLX_GPU_HIP)
  std::string caps = cat("f32 f16 i32 ", p.gcnArchName, " cus=", p.multiProcessorCount);
#else
  std::string caps = cat("f32 f16 i32 sm_", p.major, p.minor, " sms=", p.multiProcessorCount);
  if (p.major >= 7) caps += " tensor-cores";
  caps += " cuda-graphs";
#endif
  caps += cat(" warp=", p.warpSize, " dp4a");
  copy_str(info.capabilities, sizeof info.capabilities, caps);
  size_t cap =
      out->struct_size == 0 ? sizeof info : std::min<size_t>(out->struct_size, sizeof info);
  info.struct_size = static_cast<uint32_t>(cap);
  std::memcpy(out, &info, cap);
}

Device* open_device(uint32_t index, const rlx_device_options* opts) {
  (void)opts;  // n_threads means nothing to a GPU stream
  return g_devices.add(std::make_unique<Device>(checked_ordinal(index)));
}

void close_device(Device* dev) { g_devices.close(dev); }

Device& checked_device(const rlx_device* h) { return g_devices.checked(h); }

void close_all_devices() { g_devices.close_all(); }  // each ~Device synchronizes first

}  // namespace rlx::gpu
