// The weights of one model on one device: each uploaded once, on first use, and shared by every
// Program compiled for that device. Where the backend can wrap host memory, weights that need no
// conversion are used straight from the mmap'd file (no copy at all).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "rlx/backend.h"
#include "rlx/model.h"

namespace rlx {

class WeightStore {
 public:
  WeightStore(std::shared_ptr<Device> dev, const Model& model);

  // The buffer backing graph weight `name`.
  const Buffer& get(const std::string& name);

  uint64_t uploaded_bytes() const { return uploaded_; }    // copied into device memory
  uint64_t zero_copy_bytes() const { return zero_copy_; }  // used in place from the file

 private:
  std::shared_ptr<Device> dev_;
  const Model& model_;
  std::map<std::string, Buffer, std::less<>> buffers_;
  uint64_t uploaded_ = 0;
  uint64_t zero_copy_ = 0;
};

}  // namespace rlx
