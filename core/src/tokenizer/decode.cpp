// Tokens -> text: token bytes joined, then made valid UTF-8 (U+FFFD per maximal invalid
// subsequence). TokenDecoder does the same incrementally, holding back a character whose bytes
// are split across tokens.
#include <cstring>

#include "rlx/error.h"
#include "tokenizer_impl.h"
#include "utf8.h"

namespace rlx {

Utf8Step utf8_step(const uint8_t* p, size_t n) {
  uint8_t b0 = p[0];
  if (b0 < 0x80) return {1, true, false};
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte (Unicode table 3-7)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;  // no overlongs
  } else if (b0 >= 0xE1 && b0 <= 0xEC) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;  // no surrogates
  } else if (b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;  // no overlongs
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false, false};  // 80..C1 and F5..FF never start a character
  }
  uint8_t i = 1;
  for (int k = 0; k < need; ++k, ++i) {
    if (i >= n) return {i, false, true};
    uint8_t c = p[i];
    if (c < (k == 0 ? lo : 0x80) || c > (k == 0 ? hi : 0xBF)) return {i, false, false};
  }
  return {i, true, false};
}

uint32_t utf8_codepoint(const uint8_t* p, size_t len) {
  switch (len) {
    case 1: return p[0];
    case 2: return (uint32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3: return (uint32_t(p[0] & 0x0F) << 12) | (uint32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
      return (uint32_t(p[0] & 0x07) << 18) | (uint32_t(p[1] & 0x3F) << 12) |
             (uint32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
  }
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

size_t utf8_valid_prefix(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    Utf8Step st = utf8_step(p + i, n - i);
    if (!st.valid) break;
    i += st.len;
  }
  return i;
}

size_t utf8_lossy_append(std::string_view s, std::string& out, bool final) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0, n = s.size(), run = 0;  // [run, i) is valid and not yet copied
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    Utf8Step st = utf8_step(p + i, n - i);
    if (st.valid) {
      i += st.len;
      continue;
    }
    out.append(s.data() + run, i - run);
    if (st.truncated && !final) return i;  // may still be completed
    out.append(kReplacement, 3);
    i += st.len;
    run = i;
  }
  out.append(s.data() + run, i - run);
  return i;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= impl_->bytes.size())
      fail("{}: cannot decode token id {}: the vocabulary has {} tokens", impl_->label, id,
           impl_->bytes.size());
    if (skip_special && impl_->special[id]) continue;
    bytes += impl_->bytes[id];
  }
  std::string out;
  out.reserve(bytes.size());
  utf8_lossy_append(bytes, out, true);
  return out;
}

TokenDecoder::TokenDecoder(const Tokenizer& tok, bool skip_special)
    : tok_(&tok), skip_special_(skip_special) {}

std::string TokenDecoder::push(int32_t id) {
  const Tokenizer::Impl& t = *tok_->impl_;
  if (id < 0 || static_cast<size_t>(id) >= t.bytes.size())
    fail("{}: cannot decode token id {}: the vocabulary has {} tokens", t.label, id,
         t.bytes.size());
  if (skip_special_ && t.special[id]) return {};
  pending_ += t.bytes[id];
  std::string out;
  size_t used = utf8_lossy_append(pending_, out, false);
  pending_.erase(0, used);
  return out;
}

std::string TokenDecoder::flush() {
  std::string out;
  utf8_lossy_append(pending_, out, true);
  pending_.clear();
  return out;
}

}  // namespace rlx
