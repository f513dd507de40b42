// Pre-tokenization: the text is cut into pieces by a regex (PCRE2, UTF + UCP, JIT compiled),
// and BPE runs on each piece alone. Several regexes chain as HF's Sequence of Split
// pre-tokenizers does: each splits the pieces of the one before.
//
// `\s` / `\S` outside a character class and `\s` inside one are rewritten to the Unicode
// White_Space set (U+0009..000D, U+0020, U+0085, U+00A0, U+1680, U+2000..200A, U+2028, U+2029,
// U+202F, U+205F, U+3000): what `\s` means to the Rust regex / fancy-regex / onig engines behind
// HF tokenizers and tiktoken. PCRE2's own UCP `\s` also counts U+180E (its \h list), and U+FEFF
// is whitespace in neither. \p{L} / \p{N} follow PCRE2's Unicode tables (10.42: Unicode 14).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

// GPT-2 (ByteLevel with use_regex, GGUF pre "default"), Llama 3 ("llama-bpe") and Qwen2/3.
extern const char* const kGpt2Regex;
extern const char* const kLlama3Regex;
extern const char* const kQwen2Regex;

struct PreTokenizerSpec {
  std::string name = "default";      // "llama-bpe", "qwen2", "default", "custom"
  std::vector<std::string> regexes;  // applied in order; empty: the text is one piece
  bool add_prefix_space = false;     // ByteLevel's: a space before text that lacks one
};

std::string rewrite_whitespace_classes(std::string_view pattern);

class PreTokenizer {
 public:
  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Throws rlx::Error naming `label` and the pattern when a regex does not compile.
  void init(const PreTokenizerSpec& spec, std::string_view label);
  const std::string& name() const { return name_; }
  bool add_prefix_space() const { return add_prefix_space_; }

  // Appends the pieces of `text` (valid UTF-8) to `pieces`; together they cover all of it:
  // the matches, and any text between matches as pieces of its own (HF's "Isolated").
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Regex;
  void split_one(const Regex& re, std::string_view text,
                 std::vector<std::string_view>& pieces) const;
  std::vector<std::unique_ptr<Regex>> regexes_;
  std::string name_;
  bool add_prefix_space_ = false;
};

}  // namespace rlx
