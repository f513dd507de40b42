// libFuzzer: the rlx.toml profile loader (TOML syntax, sections, key types and ranges,
// [device.<name>] overrides) over one file, then describe() of the result.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "rlx/error.h"
#include "rlx/profile.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& path = rlx::fuzz::input_file("rlx.toml", data, size);
  for (const char* device : {"cpu", "cuda:0"}) {
    try {
      rlx::Profile p;
      rlx::apply_profile_file(p, path, device);
      std::string text = rlx::describe(p);
      volatile size_t sink = text.size();
      (void)sink;
    } catch (const rlx::Error&) {
    }
  }
  return 0;
}
