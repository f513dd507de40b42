#include "device.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#include "buffer.h"
#include "error.h"
#include "program.h"

namespace rlx::cpu {

namespace {

// More threads than this is a typo, not a machine.
constexpr uint32_t kMaxThreads = 1024;

int default_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The value after "key<spaces>:" on the first line of `path` that starts with `key`, or "".
// (/proc files, read with stdio: no iostreams, whose static init we do not want in a plugin.)
std::string proc_field(const char* path, const char* key) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return {};
  char line[512];
  std::string value;
  const size_t key_len = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, key_len) != 0) continue;
    const char* colon = std::strchr(line + key_len, ':');
    if (!colon) continue;
    const char* b = colon + 1;
    while (*b == ' ' || *b == '\t') ++b;
    const char* e = b + std::strlen(b);
    while (e > b && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t')) --e;
    value.assign(b, e);
    break;
  }
  std::fclose(f);
  return value;
}

std::string cpu_model_name() {
  std::string name = proc_field("/proc/cpuinfo", "model name");   // x86
  if (name.empty()) name = proc_field("/proc/cpuinfo", "Model");  // some arm boards
  if (name.empty()) name = "CPU";
  return name;
}

uint64_t physical_ram() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

uint64_t available_ram() {
  // "MemAvailable:   123456 kB"
  std::string v = proc_field("/proc/meminfo", "MemAvailable");
  return v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 10) * 1024;
}

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// The open devices. No object here has a destructor that runs at exit: a host may keep its
// PluginHost in a static and call shutdown() from its own exit-time destructor, after a function-
// local static of ours would already be gone. So the list is created on first open and deleted
// by close_all_devices() (shutdown); the mutex is constant-initialized and trivially destroyed.
constinit plugin::DeviceList<Device> g_devices;
static_assert(std::is_trivially_destructible_v<plugin::DeviceList<Device>>);

}  // namespace

// ---- Device ---------------------------------------------------------------------------------

Device::Device(int n_threads) : pool_(n_threads), buffers_("buffer"), programs_("program") {
  const char* act = std::getenv("RLX_CPU_QUANT_ACT");
  if (act && std::string_view(act) == "f32") q8_act_ = false;
}

Device::~Device() {
  // Programs and buffers hold no threads; drop them before the pool joins its workers.
  programs_.clear();
  buffers_.clear();
}

Buffer* Device::alloc_buffer(uint64_t bytes) { return buffers_.add(std::make_unique<Buffer>(bytes)); }

Buffer* Device::wrap_host(const void* host, uint64_t bytes) {
  return buffers_.add(std::make_unique<Buffer>(Buffer::WrapHost{}, host, bytes));
}

void Device::free_buffer(Buffer* b) { buffers_.take(b); }

Buffer& Device::buffer(const rlx_buffer* h) const { return buffers_.get(h); }

Program* Device::add_program(std::unique_ptr<Program> p) { return programs_.add(std::move(p)); }

void Device::free_program(Program* p) { programs_.take(p); }

Program& Device::program(const rlx_program* h) const { return programs_.get(h); }

// ---- the device table -------------------------------------------------------------------------

uint32_t device_count() { return 1; }

static void check_index(uint32_t index) {
  if (index != 0) fail(RLX_ERR_INVALID, "device index ", index, " out of range (cpu has 1 device)");
}

void device_info(uint32_t index, rlx_device_info* out) {
  check_index(index);
  if (!out) fail(RLX_ERR_INVALID, "device_info: null output");
  rlx_device_info info{};
  info.struct_size = sizeof info;
  info.type = RLX_DEVICE_CPU;
  copy_str(info.name, sizeof info.name, cpu_model_name() + " (" RLX_CPU_VARIANT ")");
  copy_str(info.driver, sizeof info.driver, "");
  info.memory_total = physical_ram();
  info.memory_free = available_ram();
  copy_str(info.capabilities, sizeof info.capabilities,
           cat("f32 i32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k q8_k "
               "host_buffers threads=",
               default_threads(), " isa=" RLX_CPU_VARIANT));
  // A host built against an older (smaller) struct gets only the fields it knows.
  size_t cap =
      out->struct_size == 0 ? sizeof info : std::min<size_t>(out->struct_size, sizeof info);
  info.struct_size = static_cast<uint32_t>(cap);
  std::memcpy(out, &info, cap);
}

Device* open_device(uint32_t index, const rlx_device_options* opts) {
  check_index(index);
  uint32_t n = 0;
  // Read n_threads only if the caller's struct is big enough to hold it (0 = this size).
  if (opts && (opts->struct_size == 0 ||
               opts->struct_size >= offsetof(rlx_device_options, n_threads) + sizeof(uint32_t)))
    n = opts->n_threads;
  if (n > kMaxThreads)
    fail(RLX_ERR_INVALID, "n_threads ", n, " is more than the maximum ", kMaxThreads);
  return g_devices.add(std::make_unique<Device>(n == 0 ? default_threads() : static_cast<int>(n)));
}

void close_device(Device* dev) { g_devices.close(dev); }  // joins its threads

Device& checked_device(const rlx_device* h) { return g_devices.checked(h); }

void close_all_devices() { g_devices.close_all(); }  // each ~Device joins its pool

}  // namespace rlx::cpu
