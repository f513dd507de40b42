// libFuzzer: a chat template (GGUF tokenizer.chat_template / tokenizer_config.json's
// chat_template: text from the model file) parsed by the Jinja-subset interpreter and rendered
// for a short conversation, with and without the generation prompt and thinking.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.h"
#include "rlx/chat_template.h"
#include "rlx/error.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  rlx::fuzz::quiet();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  static const std::vector<rlx::ChatMessage> kMessages = {
      {"system", "Be brief."},
      {"user", "Hi <|im_end|> {{ x }}"},
      {"assistant", "<think>\nhm\n</think>\n\nHello!"},
      {"user", "caf\xc3\xa9 \xf0\x9f\x99\x82"},
  };
  try {
    rlx::ChatTemplate t = rlx::ChatTemplate::parse(source, "fuzz");
    rlx::ChatOptions opts;
    opts.bos_token = "<s>";
    opts.eos_token = "</s>";
    opts.date_string = "26 Jul 2024";
    size_t n = t.render(kMessages, opts).size();
    opts.add_generation_prompt = false;
    opts.enable_thinking = false;
    n += t.render(kMessages, opts).size();
    volatile size_t sink = n;
    (void)sink;
  } catch (const rlx::Error&) {
  }
  return 0;
}
