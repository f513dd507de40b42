// The NFC normalizer (Qwen's tokenizer.json, GGUF pre "qwen2"), through utf8proc.
#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "rlx/error.h"
#include "tokenizer_impl.h"

namespace rlx {

namespace {

void nfc_append(std::string_view text, std::string& dst) {
  utf8proc_uint8_t* out = nullptr;
  // With an explicit length (no UTF8PROC_NULLTERM) NUL characters are kept, not terminators.
  utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> hold(out, &std::free);
  if (n < 0) fail("NFC normalization failed: {}", utf8proc_errmsg(n));
  dst.append(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

bool ascii(char c) { return static_cast<uint8_t>(c) < 0x80; }

}  // namespace

// NFC(a + b) == NFC(a) + NFC(b) when b starts with an ASCII character: it is a starter (no
// reordering crosses it) and no composition has an ASCII second part. So only the non-ASCII
// stretches, each with the ASCII character before it (which may compose: "e" + U+0301), go
// through utf8proc; English text with a few curly quotes costs almost nothing.
std::string nfc(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  size_t i = 0, n = s.size();
  while (i < n) {
    size_t j = i;
    while (j < n && ascii(s[j])) ++j;
    if (j == n) {
      out.append(s.substr(i));
      break;
    }
    size_t start = j > i ? j - 1 : j;
    out.append(s.substr(i, start - i));
    size_t k = j;
    while (k < n && !ascii(s[k])) ++k;
    nfc_append(s.substr(start, k - start), out);
    i = k;
  }
  return out;
}

}  // namespace rlx
