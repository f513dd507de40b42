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
    rlx::fuzz::touch(*f);
  } catch (const rlx::Error&) {
  }
  return 0;
}
