// UTF-8 helpers: validation by the Unicode table of well-formed byte sequences (no overlongs,
// no surrogates, nothing above U+10FFFF), and lossy conversion that replaces each maximal
// invalid subsequence with one U+FFFD ("substitution of maximal subparts", the policy of the
// WHATWG decoders and Rust's String::from_utf8_lossy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rlx {

struct Utf8Step {
  uint8_t len;     // bytes of the character, or of the maximal invalid subpart (>= 1)
  bool valid;      // a whole well-formed character
  bool truncated;  // invalid only because the input ended: all `len` bytes could still continue
};

// Looks at the sequence that starts at p[0]; n >= 1 bytes are available.
Utf8Step utf8_step(const uint8_t* p, size_t n);
// The code point of a well-formed sequence of `len` bytes.
uint32_t utf8_codepoint(const uint8_t* p, size_t len);
std::string utf8_encode(uint32_t cp);
// Length of the longest well-formed prefix of s.
size_t utf8_valid_prefix(std::string_view s);

// Appends s to out as valid UTF-8, each maximal invalid subsequence as U+FFFD. With
// final == false a trailing sequence cut short by the end of `s` is left unconsumed (it may be
// completed by more bytes). Returns the bytes of `s` consumed.
size_t utf8_lossy_append(std::string_view s, std::string& out, bool final);

}  // namespace rlx
