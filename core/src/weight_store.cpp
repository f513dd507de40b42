#include "rlx/weight_store.h"

#include <vector>

#include "rlx/error.h"
#include "rlx/log.h"
#include "rlx/quant.h"

namespace rlx {

WeightStore::WeightStore(std::shared_ptr<Device> dev, const Model& model)
    : dev_(std::move(dev)), model_(model) {}

const Buffer& WeightStore::get(const std::string& name) {
  if (auto it = buffers_.find(name); it != buffers_.end()) return it->second;
  const WeightSource& w = model_.weight(name);
  const int64_t elems = TensorInfo{w.dtype, w.shape}.elems();
  Buffer buf;
  if (w.dtype == w.file_dtype) {
    // Same bytes as the file: wrap the mapping when the backend can and the data is aligned
    // for its element type; otherwise copy.
    bool aligned = reinterpret_cast<uintptr_t>(w.data) % 16 == 0;
    std::optional<Buffer> wrapped = aligned ? dev_->wrap_host(w.data, w.file_nbytes) : std::nullopt;
    if (wrapped) {
      buf = std::move(*wrapped);
      zero_copy_ += w.file_nbytes;
    } else {
      buf = dev_->alloc(w.file_nbytes);
      buf.write(0, w.data, w.file_nbytes);
      uploaded_ += w.file_nbytes;
    }
  } else {
    // Unpacked: dequantize / widen to f32 on the host, then upload.
    std::vector<float> f32(static_cast<size_t>(elems));
    if (!quant::dequantize_row(w.file_dtype, w.data, f32.data(), elems))
      fail("weight '{}': cannot convert {} to f32", name, dtype_name(w.file_dtype));
    buf = dev_->alloc(f32.size() * sizeof(float));
    buf.write(0, f32.data(), f32.size() * sizeof(float));
    uploaded_ += f32.size() * sizeof(float);
  }
  log().trace("weight {} {} {} on {}", name, dtype_name(w.dtype), shape_str(w.shape),
              dev_->backend());
  return buffers_.emplace(name, std::move(buf)).first->second;
}

}  // namespace rlx
