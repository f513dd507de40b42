// libFuzzer: the safetensors reader (8-byte header length, JSON header, dtypes, shapes, offsets)
// over one model.safetensors file with nothing else next to it.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fuzz_common.h"
#include "rlx/error.h"
#include "rlx/safetensors.h"
#include "rlx/weights.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& path = rlx::fuzz::input_file("model.safetensors", data, size);
  rlx::OpenLimits limits;
  limits.max_tensors = 4096;
  limits.max_json = 1 << 20;
  try {
    std::unique_ptr<rlx::WeightFile> f = rlx::open_safetensors(path, limits);
    uint64_t sum = 0;
    for (const rlx::TensorEntry& t : f->tensors()) {
      sum += t.nbytes + static_cast<uint64_t>(t.elems());
      if (t.nbytes) sum += t.data[0] + t.data[t.nbytes - 1];
      if (f->find(t.name) == nullptr) __builtin_trap();
    }
    for (const auto& [k, v] : f->metadata()) sum += k.size() + static_cast<uint64_t>(v.type());
    volatile uint64_t sink = sum + f->mapped_bytes();
    (void)sink;
  } catch (const rlx::Error&) {
  }
  return 0;
}
