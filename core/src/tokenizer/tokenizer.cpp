// Tokenizer: building the maps from a loader's TokenizerSpec, and the encode pipeline
// (added tokens -> NFC -> pre-tokenizer regex -> BPE per piece).
#include <algorithm>

#include "byte_alphabet.h"
#include "rlx/error.h"
#include "tokenizer_impl.h"
#include "utf8.h"

namespace rlx {
namespace {

bool is_added_type(TokenType t) { return t == TokenType::Control || t == TokenType::UserDefined; }

bool all_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  return true;
}

}  // namespace

Tokenizer TokenizerBuilder::build(TokenizerSpec spec) {
  auto impl = std::make_unique<Tokenizer::Impl>();
  Tokenizer::Impl& t = *impl;
  const std::string& label = spec.label;
  t.label = label;
  const size_t n = spec.tokens.size();
  if (n == 0) fail("{}: {} is empty", label, spec.tokens_key);
  if (spec.types.size() != n)
    fail("{}: token_type has {} entries for {} tokens", label, spec.types.size(), n);

  t.bytes.resize(n);
  t.special.assign(n, 0);
  t.vocab.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string& tok = spec.tokens[id];
    if (is_added_type(spec.types[id])) {
      t.bytes[id] = tok;
      t.special[id] = spec.types[id] == TokenType::Control;
      continue;
    }
    // A token outside the byte alphabet (none in Llama 3 / Qwen) stands for its own UTF-8.
    if (!alphabet_to_bytes(tok, t.bytes[id])) t.bytes[id] = tok;
    if (!tok.empty()) t.vocab.emplace(t.bytes[id], static_cast<int32_t>(id));
  }
  for (size_t i = 0; i < spec.added.size(); ++i) {
    const AddedTokenSpec& a = spec.added[i];
    if (a.id < 0 || static_cast<size_t>(a.id) >= n)
      fail("{}: added_tokens[{}].id {} is outside the vocabulary (0..{})", label, i, a.id, n - 1);
    // A tokenizer.json vocab entry with the same id gives way to the added token.
    auto it = t.vocab.find(t.bytes[a.id]);
    if (it != t.vocab.end() && it->second == a.id) t.vocab.erase(it);
    t.bytes[a.id] = a.content;
    t.special[a.id] = a.special;
    t.added.add(a);
  }

  std::array<int32_t, 256> byte_ids;
  for (int b = 0; b < 256; ++b) {
    auto it = t.vocab.find(std::string(1, static_cast<char>(b)));
    byte_ids[b] = it == t.vocab.end() ? -1 : it->second;
  }
  t.bpe.set_byte_ids(byte_ids);
  t.bpe.reserve_merges(spec.merges.size());
  std::string ab, bb;
  for (size_t i = 0; i < spec.merges.size(); ++i) {
    // Not a structured binding: clang < 16 cannot capture one in the lambda (RLX_FUZZ builds).
    const std::string& a = spec.merges[i].first;
    const std::string& b = spec.merges[i].second;
    auto lookup = [&](const std::string& s, std::string& bytes) -> int32_t {
      if (!alphabet_to_bytes(s, bytes)) bytes = s;
      auto it = t.vocab.find(bytes);
      if (it == t.vocab.end())
        fail("{}: {}[{}] (\"{} {}\"): \"{}\" is not in the vocabulary", label, spec.merges_key, i,
             a, b, s);
      return it->second;
    };
    int32_t ia = lookup(a, ab), ib = lookup(b, bb);
    auto it = t.vocab.find(ab + bb);
    if (it == t.vocab.end())
      fail("{}: {}[{}] (\"{} {}\"): the merged token \"{}{}\" is not in the vocabulary", label,
           spec.merges_key, i, a, b, a, b);
    t.bpe.add_merge(ia, ib, it->second);
  }
  if (spec.ignore_merges) t.bpe.set_ignore_merges(&t.vocab);

  t.pre.init(spec.pre, label);
  t.nfc = spec.nfc;

  auto check_id = [&](int32_t id, std::string_view what) {
    if (id < -1 || id >= static_cast<int32_t>(n))
      fail("{}: {} {} is outside the vocabulary (0..{})", label, what, id, n - 1);
  };
  for (int32_t id : spec.prefix_ids) check_id(id, "post_processor token id");
  for (int32_t id : spec.suffix_ids) check_id(id, "post_processor token id");
  t.prefix_ids = std::move(spec.prefix_ids);
  t.suffix_ids = std::move(spec.suffix_ids);
  t.bos = t.prefix_ids.empty() ? -1 : t.prefix_ids.front();

  // A token by its text: added / control tokens first, then the ordinary vocabulary.
  auto id_of = [&](std::string_view text) -> int32_t {
    for (const AddedTokenSpec& a : spec.added)
      if (a.content == text) return a.id;
    for (size_t id = 0; id < n; ++id)
      if (is_added_type(spec.types[id]) && spec.tokens[id] == text) return static_cast<int32_t>(id);
    auto it = t.vocab.find(std::string(text));
    return it == t.vocab.end() ? -1 : it->second;
  };
  check_id(spec.eos, "eos token id");
  t.eos = spec.eos;
  for (size_t i = 0; t.eos < 0 && i < spec.eos_names.size(); ++i) t.eos = id_of(spec.eos_names[i]);
  if (t.eos >= 0) t.stops.push_back(t.eos);
  for (std::string_view name :
       {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|endoftext|>", "<|end_of_text|>"}) {
    int32_t id = id_of(name);
    if (id >= 0 && std::find(t.stops.begin(), t.stops.end(), id) == t.stops.end())
      t.stops.push_back(id);
  }
  return Tokenizer(std::move(impl));
}

void Tokenizer::Impl::encode_text(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string spaced;
  if (pre.add_prefix_space() && text.front() != ' ') {
    spaced.reserve(text.size() + 1);
    spaced += ' ';
    spaced += text;
    text = spaced;
  }
  std::vector<std::string_view> pieces;
  std::string normalized;
  size_t i = 0;
  while (i < text.size()) {
    size_t valid = utf8_valid_prefix(text.substr(i));
    if (valid == 0) {
      // Invalid UTF-8 (only possible from C++ callers): each maximal invalid subsequence is a
      // piece of its own, so every input byte still round-trips through decode.
      Utf8Step st = utf8_step(reinterpret_cast<const uint8_t*>(text.data()) + i, text.size() - i);
      bpe.encode(text.substr(i, st.len), out);
      i += st.len;
      continue;
    }
    std::string_view run = text.substr(i, valid);
    i += valid;
    if (nfc && !all_ascii(run)) {
      normalized = rlx::nfc(run);
      run = normalized;
    }
    pieces.clear();
    pre.split(run, pieces);
    for (std::string_view p : pieces) bpe.encode(p, out);
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& opts) const {
  const Impl& t = *impl_;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (opts.add_bos) out.insert(out.end(), t.prefix_ids.begin(), t.prefix_ids.end());
  size_t pos = 0;
  AddedTokenMatcher::Match m;
  while (t.added.find(text, pos, opts.parse_special, m)) {
    t.encode_text(text.substr(pos, m.begin - pos), out);
    out.push_back(m.id);
    pos = m.end;
  }
  t.encode_text(text.substr(pos), out);
  if (opts.add_bos) out.insert(out.end(), t.suffix_ids.begin(), t.suffix_ids.end());
  return out;
}

size_t Tokenizer::vocab_size() const { return impl_->bytes.size(); }
int32_t Tokenizer::bos_id() const { return impl_->bos; }
int32_t Tokenizer::eos_id() const { return impl_->eos; }
const std::vector<int32_t>& Tokenizer::stop_ids() const { return impl_->stops; }
const std::string& Tokenizer::pre() const { return impl_->pre.name(); }

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[id];
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->bytes.size())
    fail("{}: token id {} is out of range (the vocabulary has {} tokens)", impl_->label, id,
         impl_->bytes.size());
  return impl_->bytes[id];
}

}  // namespace rlx
