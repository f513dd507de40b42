#include "rlx/backend.h"

#include <cstddef>
#include <utility>

#include "rlx/error.h"
#include "rlx/log.h"

namespace rlx {

const char* status_name(rlx_status st) {
  switch (st) {
    case RLX_OK: return "ok";
    case RLX_ERR_UNSUPPORTED: return "unsupported";
    case RLX_ERR_INVALID: return "invalid argument";
    case RLX_ERR_NO_DEVICE: return "no device";
    case RLX_ERR_OUT_OF_MEMORY: return "out of memory";
    case RLX_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

void check_status(rlx_status st, const ErrBuf& eb, std::string_view what) {
  if (st == RLX_OK) return;
  std::string_view msg(eb.msg);
  if (msg.empty()) msg = status_name(st);
  fail("{}: {}", what, msg);
}

// ---- Buffer ----

Buffer::Buffer(std::shared_ptr<Device> dev, rlx_buffer* h, uint64_t bytes)
    : dev_(std::move(dev)), h_(h), bytes_(bytes) {}
Buffer::~Buffer() { release(); }
Buffer::Buffer(Buffer&& o) noexcept
    : dev_(std::move(o.dev_)), h_(std::exchange(o.h_, nullptr)), bytes_(o.bytes_) {}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    dev_ = std::move(o.dev_);
    h_ = std::exchange(o.h_, nullptr);
    bytes_ = o.bytes_;
  }
  return *this;
}
void Buffer::release() {
  if (h_) dev_->api()->buffer_free(dev_->handle(), h_);
  h_ = nullptr;
}

void Buffer::write(uint64_t offset, const void* src, uint64_t bytes) {
  dev_->write(h_, offset, src, bytes);
}

void Buffer::read(uint64_t offset, void* dst, uint64_t bytes) const {
  dev_->read(h_, offset, dst, bytes);
}

// ---- Program ----

Program::Program(std::shared_ptr<Device> dev, rlx_program* h, uint32_t n_slots)
    : dev_(std::move(dev)), h_(h), n_slots_(n_slots) {}
Program::~Program() { release(); }
Program::Program(Program&& o) noexcept
    : dev_(std::move(o.dev_)), h_(std::exchange(o.h_, nullptr)), n_slots_(o.n_slots_) {}
Program& Program::operator=(Program&& o) noexcept {
  if (this != &o) {
    release();
    dev_ = std::move(o.dev_);
    h_ = std::exchange(o.h_, nullptr);
    n_slots_ = o.n_slots_;
  }
  return *this;
}
void Program::release() {
  if (h_) dev_->api()->program_free(dev_->handle(), h_);
  h_ = nullptr;
}

void Program::run(std::span<const rlx_binding> bindings) {
  if (bindings.size() != n_slots_)
    fail("program needs {} bindings (one per input, weight and output), got {}", n_slots_,
         bindings.size());
  ErrBuf eb;
  check_status(dev_->api()->program_run(dev_->handle(), h_, bindings.data(),
                                        static_cast<uint32_t>(bindings.size()), eb.err()),
               eb, dev_->backend() + ": run");
}

// ---- Device ----

Device::Device(const rlx_backend_api* api, std::string backend, uint32_t index, rlx_device* h)
    : api_(api), backend_(std::move(backend)), index_(index), h_(h) {}

Device::~Device() {
  if (h_) api_->device_close(h_);
}

bool Device::is_gpu() const {
  rlx_device_info info{};
  info.struct_size = sizeof info;
  ErrBuf eb;
  if (api_->device_info(index_, &info, eb.err()) != RLX_OK) return false;
  return info.type == RLX_DEVICE_DISCRETE_GPU || info.type == RLX_DEVICE_INTEGRATED_GPU;
}

Buffer Device::alloc(uint64_t bytes) {
  ErrBuf eb;
  rlx_buffer* h = nullptr;
  const rlx_status st = api_->buffer_alloc(h_, bytes, &h, eb.err());
  if (st == RLX_ERR_OUT_OF_MEMORY)
    fail("{}:{}: out of memory: asked for {} bytes ({:.2f} GiB): {}", backend_, index_, bytes,
         static_cast<double>(bytes) / (1ull << 30), eb.msg[0] ? eb.msg : "no detail from the plugin");
  check_status(st, eb, fmt::format("{}:{}: allocating {} bytes", backend_, index_, bytes));
  return Buffer(shared_from_this(), h, bytes);
}

std::optional<Buffer> Device::wrap_host(const void* ptr, uint64_t bytes) {
  if (api_->struct_size < offsetof(rlx_backend_api, buffer_from_host) + sizeof(void*) ||
      !api_->buffer_from_host)
    return std::nullopt;
  ErrBuf eb;
  rlx_buffer* h = nullptr;
  if (api_->buffer_from_host(h_, ptr, bytes, &h, eb.err()) != RLX_OK) {
    log().debug("{}: no zero-copy buffer ({}); copying instead", backend_, eb.msg);
    return std::nullopt;
  }
  return Buffer(shared_from_this(), h, bytes);
}

void Device::write(rlx_buffer* h, uint64_t offset, const void* src, uint64_t bytes) const {
  ErrBuf eb;
  check_status(api_->buffer_write(h_, h, offset, src, bytes, eb.err()), eb,
               backend_ + ": buffer write");
}

void Device::read(rlx_buffer* h, uint64_t offset, void* dst, uint64_t bytes) const {
  ErrBuf eb;
  check_status(api_->buffer_read(h_, h, offset, dst, bytes, eb.err()), eb,
               backend_ + ": buffer read");
}

bool Device::supports(const PlannedGraph& g, uint32_t node) const {
  rlx_graph_desc d = g.desc();
  return api_->supports(h_, &d, node);
}

Program Device::compile(const PlannedGraph& g) {
  rlx_graph_desc d = g.desc();
  ErrBuf eb;
  rlx_program* h = nullptr;
  check_status(api_->program_compile(h_, &d, &h, eb.err()), eb, backend_ + ": compile");
  return Program(shared_from_this(), h, d.n_slots);
}

}  // namespace rlx
