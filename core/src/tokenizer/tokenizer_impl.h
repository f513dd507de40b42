// The tokenizer's private parts: the loaders (hf_json.cpp, gguf_vocab.cpp) fill a
// TokenizerSpec, TokenizerBuilder::build turns it into a Tokenizer::Impl (vocab maps, merge ranks,
// compiled regexes), and tokenizer.cpp runs encode / decode over the Impl.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "added_tokens.h"
#include "bpe.h"
#include "pretokenize.h"
#include "rlx/tokenizer.h"

namespace rlx {

// GGUF token types (llama.cpp numbering); tokenizer.json added tokens map to Control
// (special: true) or UserDefined (special: false).
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct AddedTokenSpec {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false;
};

// Everything a loader reads from a file, before any map is built. Normal tokens and merges are
// in the GPT-2 byte alphabet ("Ġthe"); added-token contents are plain text.
struct TokenizerSpec {
  std::string label;                  // the file, for error messages
  std::string tokens_key = "tokens";  // where tokens came from, for error messages
  std::string merges_key = "merges";  // where merges came from, for error messages
  std::vector<std::string> tokens;    // by id; "" for ids only added tokens fill
  std::vector<TokenType> types;       // by id (Normal when the file has none)
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedTokenSpec> added;
  bool ignore_merges = false;
  PreTokenizerSpec pre;
  bool nfc = false;
  std::vector<int32_t> prefix_ids, suffix_ids;  // added around the text by add_bos
  int32_t eos = -1;
  // tokenizer.json has no eos of its own: these names are looked up when eos is -1.
  std::vector<std::string> eos_names;
};

struct Tokenizer::Impl {
  std::string label;
  std::vector<std::string> bytes;                  // by id: the raw bytes the token stands for
  std::vector<uint8_t> special;                    // by id: 1 for control / special added tokens
  std::unordered_map<std::string, int32_t> vocab;  // bytes -> id of the ordinary tokens
  BpeModel bpe;
  PreTokenizer pre;
  bool nfc = false;
  AddedTokenMatcher added;
  std::vector<int32_t> prefix_ids, suffix_ids;
  int32_t bos = -1, eos = -1;
  std::vector<int32_t> stops;

  void encode_text(std::string_view text, std::vector<int32_t>& out) const;
};

struct TokenizerBuilder {
  // Validates the spec and builds the maps; throws rlx::Error naming spec.label and the key.
  static Tokenizer build(TokenizerSpec spec);
};

// Unicode NFC (utf8proc) of valid UTF-8 text.
std::string nfc(std::string_view text);

}  // namespace rlx
