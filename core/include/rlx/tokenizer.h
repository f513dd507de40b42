// Byte-level BPE tokenizers (GPT-2 style: Llama 3, Qwen2/3), loaded from a GGUF file's
// tokenizer.ggml.* metadata or from a Hugging Face tokenizer.json.
//
//   auto tok = rlx::Tokenizer::from_file(weights_file);          // tokenizer.ggml.*
//   auto tok = rlx::Tokenizer::from_hf_json("tokenizer.json");
//   std::vector<int32_t> ids = tok.encode("Hello", {.add_bos = true});
//   std::string text = tok.decode(ids);
//   rlx::TokenDecoder stream(tok);  for (id : ids) std::cout << stream.push(id);
//
// Encoding: added / special token strings are matched first (unless parse_special is false),
// the rest is normalized (NFC where the tokenizer says so), split by the pre-tokenizer regex
// (PCRE2, full Unicode classes), each piece mapped to the byte alphabet and merged by rank.
// Decoding maps tokens back to bytes; bytes that are not valid UTF-8 become U+FFFD, one per
// maximal invalid subsequence (as the Unicode standard recommends).
//
// Errors (a malformed tokenizer.json, a missing GGUF key, an unknown tokenizer model) throw
// rlx::Error naming the file and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

class WeightFile;

struct EncodeOptions {
  bool add_bos = false;  // prepend BOS when the tokenizer has one (Qwen3 has none)
  // Added / special token strings in the text become their ids. false: special tokens are
  // plain text; non-special added tokens (Qwen's <think>) still match, as in HF and llama.cpp.
  bool parse_special = true;
};

class Tokenizer {
 public:
  // tokenizer.ggml.model = "gpt2" with tokens, merges, token_type, pre, bos / eos ids.
  static Tokenizer from_gguf(const WeightFile& f);
  // An HF tokenizer.json with model.type "BPE" and a ByteLevel pre-tokenizer / decoder.
  static Tokenizer from_hf_json(const std::filesystem::path& path);
  static Tokenizer from_hf_json_text(std::string_view json, std::string_view label);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opts = {}) const;
  // Bytes of the tokens, as UTF-8 text (invalid sequences -> U+FFFD). skip_special drops
  // special tokens (control tokens such as <|eot_id|>).
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  size_t vocab_size() const;
  int32_t bos_id() const;  // the id add_bos prepends; -1 when none
  int32_t eos_id() const;  // -1 when none
  // The ids that end a turn or the text: eos, and end-of-turn tokens (<|eot_id|>, <|eom_id|>,
  // <|im_end|>, <|endoftext|>, <|end_of_text|>) when present.
  const std::vector<int32_t>& stop_ids() const;
  bool is_special(int32_t id) const;
  // The token's raw bytes (after the byte-alphabet mapping); throws for an id out of range.
  std::string token_bytes(int32_t id) const;
  // "llama-bpe", "qwen2", ...: the pre-tokenizer in use.
  const std::string& pre() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class TokenDecoder;
  friend struct TokenizerBuilder;  // the loaders (core/src/tokenizer/)
};

// Streaming decode: push ids as they are generated; each call returns the text that is complete
// so far (a UTF-8 character split across tokens is held back until its last byte arrives).
class TokenDecoder {
 public:
  explicit TokenDecoder(const Tokenizer& tok, bool skip_special = false);
  std::string push(int32_t id);
  std::string flush();  // whatever is held back, invalid bytes as U+FFFD

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace rlx
