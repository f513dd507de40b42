// The GPT-2 byte alphabet: byte-level BPE vocabularies spell every byte as a printable Unicode
// character so that tokens are valid strings. Bytes 33..126, 161..172 and 174..255 stand for
// themselves; the other 68 bytes (controls, space, DEL, NBSP, soft hyphen ...) become U+0100 +
// n in byte order, so space is U+0120 'Ġ' and newline U+010A 'Ċ'.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rlx {

uint32_t byte_to_codepoint(uint8_t b);
// The alphabet character of a byte, as UTF-8.
std::string_view byte_to_alphabet(uint8_t b);
// "Ġthe" -> " the". Returns false (out unspecified) when `s` holds a character outside the
// alphabet or invalid UTF-8.
bool alphabet_to_bytes(std::string_view s, std::string& out);
// " the" -> "Ġthe".
std::string bytes_to_alphabet(std::string_view bytes);

}  // namespace rlx
