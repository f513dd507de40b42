#define PCRE2_CODE_UNIT_WIDTH 8
#include "pretokenize.h"

#include <pcre2.h>

#include "rlx/error.h"

namespace rlx {

const char* const kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

// Unicode White_Space, as class-body text.
constexpr std::string_view kWhiteSpace =
    R"(\t\n\x0B\f\r\x20\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// Per-thread PCRE2 scratch: match data for the whole-match offsets and a JIT stack that can
// grow to 8 MiB (the 32 KiB default runs out on very long whitespace runs).
struct MatchScratch {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* mc = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* js = pcre2_jit_stack_create(32 << 10, 8 << 20, nullptr);
  MatchScratch() { pcre2_jit_stack_assign(mc, nullptr, js); }
  ~MatchScratch() {
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  std::string pattern;
  ~Regex() { pcre2_code_free(code); }
};

std::string rewrite_whitespace_classes(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      ++i;
      if (e == 's') {
        if (in_class) {
          out += kWhiteSpace;
        } else {
          out += '[';
          out += kWhiteSpace;
          out += ']';
        }
      } else if (e == 'S' && !in_class) {
        out += "[^";
        out += kWhiteSpace;
        out += ']';
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

void PreTokenizer::init(const PreTokenizerSpec& spec, std::string_view label) {
  regexes_.clear();
  name_ = spec.name;
  add_prefix_space_ = spec.add_prefix_space;
  for (const std::string& pattern : spec.regexes) {
    auto re = std::make_unique<Regex>();
    re->pattern = pattern;
    std::string rewritten = rewrite_whitespace_classes(pattern);
    int err = 0;
    PCRE2_SIZE at = 0;
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                             PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
    if (!re->code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      fail("{}: the pre-tokenizer regex does not compile (PCRE2: {} at offset {}): {}", label,
           reinterpret_cast<const char*>(msg), at, pattern);
    }
    // JIT is an optimization: without it (an unsupported CPU) pcre2_match interprets.
    pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    regexes_.push_back(std::move(re));
  }
}

void PreTokenizer::split_one(const Regex& re, std::string_view text,
                             std::vector<std::string_view>& pieces) const {
  MatchScratch& s = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, gap = 0;  // [gap, match start) is text no match covered
  while (pos < text.size()) {
    int rc = pcre2_match(re.code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, s.md, s.mc);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      fail("pre-tokenizer regex failed on a {}-byte text (PCRE2: {}): {}", text.size(),
           reinterpret_cast<const char*>(msg), re.pattern);
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.md);
    size_t b = ov[0], e = ov[1];
    if (b > gap) pieces.push_back(text.substr(gap, b - gap));
    if (e > b) {
      pieces.push_back(text.substr(b, e - b));
      pos = gap = e;
    } else {  // an empty match: step over one character
      pos = b + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
      gap = b;
    }
  }
  if (gap < text.size()) pieces.push_back(text.substr(gap));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  if (text.empty()) return;
  if (regexes_.empty()) {
    pieces.push_back(text);
    return;
  }
  size_t first = pieces.size();
  split_one(*regexes_[0], text, pieces);
  for (size_t r = 1; r < regexes_.size(); ++r) {
    std::vector<std::string_view> in(pieces.begin() + first, pieces.end());
    pieces.resize(first);
    for (std::string_view p : in) split_one(*regexes_[r], p, pieces);
  }
}

}  // namespace rlx
