#include "added_tokens.h"

#include <algorithm>
#include <cstring>

#include "tokenizer_impl.h"

namespace rlx {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

void AddedTokenMatcher::add(const AddedTokenSpec& t) {
  if (t.content.empty()) return;
  auto idx = static_cast<uint32_t>(tokens_.size());
  tokens_.push_back({t.content, t.id, t.special, t.lstrip, t.rstrip, t.single_word});
  auto& bucket = by_first_[static_cast<uint8_t>(t.content[0])];
  // Longest first; between equal lengths the earlier one wins (a duplicate is never reached).
  auto at = std::find_if(bucket.begin(), bucket.end(),
                         [&](uint32_t j) { return tokens_[j].content.size() < t.content.size(); });
  bucket.insert(at, idx);
}

bool AddedTokenMatcher::find(std::string_view text, size_t from, bool parse_special,
                             Match& m) const {
  if (tokens_.empty()) return false;
  for (size_t i = from; i < text.size(); ++i) {
    const auto& bucket = by_first_[static_cast<uint8_t>(text[i])];
    if (bucket.empty()) continue;
    for (uint32_t j : bucket) {
      const Entry& e = tokens_[j];
      if (!parse_special && e.special) continue;
      size_t n = e.content.size();
      if (n > text.size() - i || std::memcmp(text.data() + i, e.content.data(), n) != 0) continue;
      if (e.single_word &&
          ((i > 0 && is_word(text[i - 1])) || (i + n < text.size() && is_word(text[i + n]))))
        continue;
      size_t b = i, end = i + n;
      if (e.lstrip)
        while (b > from && is_space(text[b - 1])) --b;
      if (e.rstrip)
        while (end < text.size() && is_space(text[end])) ++end;
      m = Match{b, end, e.id};
      return true;
    }
  }
  return false;
}

}  // namespace rlx
