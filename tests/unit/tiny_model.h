// Writes tiny random-weight llama / qwen3 GGUF files with rlx's own GgufWriter, for tests that
// must not depend on Python. The numpy maker (scripts/make_test_model.py) is the independent
// check; this one exercises the C++ writer and quantizers.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "rlx/dtype.h"
#include "rlx/plugin_host.h"

namespace rlx::test {

struct TinyModel {
  std::string arch = "llama";  // or "qwen3"
  int64_t dim = 64, layers = 2, heads = 4, kv_heads = 2, ffn = 96, vocab = 97, ctx = 64;
  int64_t head_dim = 0;  // 0 = dim / heads
  DType matrix_dtype = RLX_F32;
  bool tied = false;
  uint32_t seed = 1;
  int64_t meta_ffn = 0;  // when set, the metadata claims this ffn size (tensors keep `ffn`)
  // Lets a test break the file: called with each tensor name, may rename ("" drops it).
  std::function<std::string(const std::string&)> rename;
};

void write_tiny_model(const TinyModel& m, const std::filesystem::path& path);

// A host over the plugins this build made (no RLX_PLUGIN_PATH, no install dir), shared by the
// test binary.
PluginHost& tree_plugins();

}  // namespace rlx::test
