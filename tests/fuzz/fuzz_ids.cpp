// libFuzzer: the CLI's --prompt-ids list ("1,42,7"), rlx::cli::parse_ids (apps/rlx/common.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "fuzz_common.h"
#include "rlx/error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<int32_t> ids = rlx::cli::parse_ids(s);
    if (ids.empty()) __builtin_trap();  // documented: an empty list throws
    for (int32_t id : ids)
      if (id < 0) __builtin_trap();  // documented: ids are in [0, INT32_MAX]
  } catch (const rlx::Error&) {
  }
  return 0;
}
