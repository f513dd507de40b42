// Text in / text out for the CLI: the tokenizer and the chat template that go with a model.
#pragma once

#include <filesystem>
#include <string>

#include "rlx/chat_template.h"
#include "rlx/tokenizer.h"
#include "rlx/weights.h"

namespace rlx::cli {

// `tokenizer_json` (--tokenizer) when given; else the weights' own: a GGUF file's
// tokenizer.ggml.* metadata (`file`), or tokenizer.json in a Hugging Face model directory.
// Throws naming what is missing and the flag that supplies it.
Tokenizer load_tokenizer(const std::filesystem::path& weights, const WeightFile* file,
                         const std::string& tokenizer_json);

// The model's own chat template (GGUF tokenizer.chat_template, or chat_template in the model
// directory's tokenizer_config.json) when it has one, else the built-in one for its family
// ("llama32" -> Llama 3, "qwen3" -> Qwen3). `source` says which was used.
ChatTemplate load_chat_template(const std::filesystem::path& weights, const WeightFile& file,
                                const std::string& family, std::string* source);

}  // namespace rlx::cli
