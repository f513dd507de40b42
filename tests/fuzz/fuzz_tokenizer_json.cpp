// libFuzzer: an HF tokenizer.json (model, merges, added tokens, normalizer, pre-tokenizer,
// decoder); when it loads, a fixed text is encoded and the ids decoded back.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "rlx/error.h"
#include "rlx/tokenizer.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    rlx::Tokenizer tok = rlx::Tokenizer::from_hf_json_text(json, "fuzz");
    static constexpr std::string_view kText =
        "Hello, world! It's 2024: caf\xc3\xa9 \xe2\x80\x94 <|im_end|>\n\t  123 \xf0\x9f\x99\x82 x";
    rlx::EncodeOptions eo;
    eo.add_bos = true;
    std::vector<int32_t> ids = tok.encode(kText, eo);
    eo.parse_special = false;
    std::vector<int32_t> plain = tok.encode(kText, eo);
    std::string back = tok.decode(ids) + tok.decode(plain, true);
    for (int32_t id : tok.stop_ids()) back += tok.token_bytes(id);
    volatile size_t sink = back.size() + tok.vocab_size() + tok.pre().size();
    (void)sink;
  } catch (const rlx::Error&) {
  }
  return 0;
}
