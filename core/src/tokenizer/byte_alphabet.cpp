#include "byte_alphabet.h"

#include <array>

#include "utf8.h"

namespace rlx {
namespace {

bool maps_to_itself(unsigned b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

struct Tables {
  std::array<uint32_t, 256> cp{};
  std::array<std::string, 256> utf8;
  std::array<int16_t, 512> byte_of{};  // code point (< 512) -> byte, -1 when not in the alphabet
  Tables() {
    byte_of.fill(-1);
    uint32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      cp[b] = maps_to_itself(b) ? b : next++;
      utf8[b] = utf8_encode(cp[b]);
      byte_of[cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return tables().cp[b]; }

std::string_view byte_to_alphabet(uint8_t b) { return tables().utf8[b]; }

bool alphabet_to_bytes(std::string_view s, std::string& out) {
  const Tables& t = tables();
  out.clear();
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    if (p[i] < 0x80) {  // ASCII: the printable ones are themselves, the rest are not in it
      if (t.byte_of[p[i]] < 0) return false;
      out.push_back(static_cast<char>(p[i++]));
      continue;
    }
    Utf8Step st = utf8_step(p + i, n - i);
    if (!st.valid) return false;
    uint32_t cp = utf8_codepoint(p + i, st.len);
    if (cp >= t.byte_of.size() || t.byte_of[cp] < 0) return false;
    out.push_back(static_cast<char>(t.byte_of[cp]));
    i += st.len;
  }
  return true;
}

std::string bytes_to_alphabet(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_to_alphabet(static_cast<uint8_t>(c));
  return out;
}

}  // namespace rlx
