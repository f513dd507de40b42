// Added tokens (tokenizer.json added_tokens, GGUF CONTROL / USER_DEFINED tokens) are found in
// the raw text before normalization and pre-tokenization: leftmost match first, the longest
// one at that position. With parse_special false, special tokens are not matched (the text is
// tokenized as plain text) but non-special added tokens still are, as in HF tokenizers
// (split_special_tokens) and llama.cpp (parse_special).
//
// lstrip / rstrip take ASCII whitespace next to the match into it; single_word only matches
// when the neighbours are not ASCII letters, digits or '_'. (Llama 3 and Qwen set none of
// them; HF's are Unicode-aware, these are the ASCII subset.) Added tokens marked `normalized`
// are matched against the raw text too, not the normalized one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

struct AddedTokenSpec;

class AddedTokenMatcher {
 public:
  void add(const AddedTokenSpec& t);
  bool empty() const { return tokens_.empty(); }

  struct Match {
    size_t begin, end;  // the bytes of the text the token replaces (with stripped whitespace)
    int32_t id;
  };
  // The first match at or after `from`; false when there is none.
  bool find(std::string_view text, size_t from, bool parse_special, Match& m) const;

 private:
  struct Entry {
    std::string content;
    int32_t id;
    bool special, lstrip, rstrip, single_word;
  };
  std::vector<Entry> tokens_;
  std::array<std::vector<uint32_t>, 256> by_first_;  // indices, longest content first
};

}  // namespace rlx
