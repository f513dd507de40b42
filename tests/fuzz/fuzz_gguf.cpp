// libFuzzer: the GGUF reader (header, key/values, tensor infos, data bounds) over one file, with
// the limits a user gets (every count and length must be checked against the file's size; the
// fuzzer's -rss_limit_mb / -malloc_limit_mb catch an allocation that is not), then the
// tokenizer read from the same metadata (tokenizer.ggml.*), which encodes and decodes a text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "fuzz_common.h"
#include "rlx/error.h"
#include "rlx/gguf.h"
#include "rlx/tokenizer.h"
#include "rlx/weights.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& path = rlx::fuzz::input_file("model.gguf", data, size);
  std::unique_ptr<rlx::WeightFile> f;
  try {
    f = rlx::open_gguf(path);
    rlx::fuzz::touch(*f);
  } catch (const rlx::Error&) {
    return 0;
  }
  try {
    rlx::Tokenizer tok = rlx::Tokenizer::from_gguf(*f);
    rlx::EncodeOptions eo;
    eo.add_bos = true;
    std::vector<int32_t> ids = tok.encode("Hello, world! caf\xc3\xa9 <|eot_id|> 123\n", eo);
    volatile size_t sink = tok.decode(ids).size() + tok.decode(ids, true).size();
    (void)sink;
  } catch (const rlx::Error&) {
  }
  return 0;
}
