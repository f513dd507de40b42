// Hugging Face tokenizer.json -> TokenizerSpec. Only what byte-level BPE tokenizers use is
// accepted; any other normalizer, pre-tokenizer, decoder or post-processor type is an error
// that names it (silently ignoring one would give wrong ids).
#include <nlohmann/json.hpp>

#include "../safetensors_json.h"
#include "rlx/error.h"
#include "tokenizer_impl.h"

namespace rlx {
namespace {

using nlohmann::json;

constexpr int64_t kMaxVocab = 1 << 24;  // far above any real vocabulary; caps the allocation

struct Reader {
  const std::string& label;

  const json& need(const json& obj, const char* key, const std::string& path) const {
    if (!obj.is_object())
      fail("{}: {} must be a JSON object, found {}", label, path, obj.type_name());
    auto it = obj.find(key);
    if (it == obj.end()) fail("{}: {}.{} is missing", label, path, key);
    return *it;
  }
  std::string str(const json& j, const std::string& path) const {
    if (!j.is_string()) fail("{}: {} must be a string, found {}", label, path, j.type_name());
    return j.get<std::string>();
  }
  // An optional key, null counting as absent.
  const json* opt(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  bool flag(const json& obj, const char* key, bool dflt, const std::string& path) const {
    const json* j = opt(obj, key);
    if (!j) return dflt;
    if (!j->is_boolean())
      fail("{}: {}.{} must be true or false, found {}", label, path, key, j->type_name());
    return j->get<bool>();
  }
  std::string type_of(const json& obj, const std::string& path) const {
    return str(need(obj, "type", path), path + ".type");
  }
};

void read_normalizer(const Reader& r, const json& j, const std::string& path, TokenizerSpec& s) {
  std::string type = r.type_of(j, path);
  if (type == "NFC") {
    s.nfc = true;
  } else if (type == "Sequence") {
    const json& items = r.need(j, "normalizers", path);
    if (!items.is_array()) fail("{}: {}.normalizers must be an array", r.label, path);
    for (size_t i = 0; i < items.size(); ++i)
      read_normalizer(r, items[i], fmt::format("{}.normalizers[{}]", path, i), s);
  } else {
    fail("{}: {}.type \"{}\" is not supported (byte-level BPE tokenizers use NFC or none)", r.label,
         path, type);
  }
}

void read_pre_tokenizer(const Reader& r, const json& j, const std::string& path, TokenizerSpec& s,
                        bool& byte_level) {
  std::string type = r.type_of(j, path);
  if (type == "Sequence") {
    const json& items = r.need(j, "pretokenizers", path);
    if (!items.is_array()) fail("{}: {}.pretokenizers must be an array", r.label, path);
    for (size_t i = 0; i < items.size(); ++i)
      read_pre_tokenizer(r, items[i], fmt::format("{}.pretokenizers[{}]", path, i), s, byte_level);
  } else if (type == "Split") {
    if (byte_level) fail("{}: {}: a Split after ByteLevel is not supported", r.label, path);
    const json& pat = r.need(j, "pattern", path);
    if (const json* re = pat.is_object() ? r.opt(pat, "Regex") : nullptr) {
      s.pre.regexes.push_back(r.str(*re, path + ".pattern.Regex"));
    } else if (const json* lit = pat.is_object() ? r.opt(pat, "String") : nullptr) {
      std::string text = r.str(*lit, path + ".pattern.String");
      if (text.find("\\E") != std::string::npos)
        fail("{}: {}.pattern.String contains \\E, which is not supported", r.label, path);
      s.pre.regexes.push_back("\\Q" + text + "\\E");
    } else {
      fail("{}: {}.pattern must be {{\"Regex\": ...}} or {{\"String\": ...}}", r.label, path);
    }
    std::string behavior = r.str(r.need(j, "behavior", path), path + ".behavior");
    if (behavior != "Isolated")
      fail("{}: {}.behavior \"{}\" is not supported (only \"Isolated\")", r.label, path, behavior);
    if (r.flag(j, "invert", false, path))
      fail("{}: {}.invert true is not supported", r.label, path);
  } else if (type == "ByteLevel") {
    byte_level = true;
    if (r.flag(j, "use_regex", true, path)) s.pre.regexes.push_back(kGpt2Regex);
    s.pre.add_prefix_space = r.flag(j, "add_prefix_space", false, path);
  } else {
    fail("{}: {}.type \"{}\" is not supported (byte-level BPE needs Split + ByteLevel)", r.label,
         path, type);
  }
}

void check_decoder(const Reader& r, const json& j, const std::string& path) {
  std::string type = r.type_of(j, path);
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& items = r.need(j, "decoders", path);
    if (!items.is_array()) fail("{}: {}.decoders must be an array", r.label, path);
    for (size_t i = 0; i < items.size(); ++i)
      check_decoder(r, items[i], fmt::format("{}.decoders[{}]", path, i));
    return;
  }
  fail("{}: {}.type \"{}\" is not supported (only ByteLevel)", r.label, path, type);
}

void read_post_processor(const Reader& r, const json& j, const std::string& path,
                         TokenizerSpec& s) {
  std::string type = r.type_of(j, path);
  if (type == "ByteLevel") return;  // offsets only; no effect on ids
  if (type == "Sequence") {
    const json& items = r.need(j, "processors", path);
    if (!items.is_array()) fail("{}: {}.processors must be an array", r.label, path);
    for (size_t i = 0; i < items.size(); ++i)
      read_post_processor(r, items[i], fmt::format("{}.processors[{}]", path, i), s);
    return;
  }
  if (type != "TemplateProcessing")
    fail("{}: {}.type \"{}\" is not supported (ByteLevel, TemplateProcessing or Sequence)", r.label,
         path, type);
  const json& single = r.need(j, "single", path);
  if (!single.is_array()) fail("{}: {}.single must be an array", r.label, path);
  const json& specials = r.need(j, "special_tokens", path);
  bool after = false;
  for (size_t i = 0; i < single.size(); ++i) {
    std::string at = fmt::format("{}.single[{}]", path, i);
    const json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      after = true;
      continue;
    }
    const json& tok = r.need(item, "SpecialToken", at);
    std::string name = r.str(r.need(tok, "id", at + ".SpecialToken"), at + ".SpecialToken.id");
    std::string sp = path + ".special_tokens";
    if (!specials.is_object() || !specials.contains(name))
      fail("{}: {}[\"{}\"] is missing", r.label, sp, name);
    const json& ids = r.need(specials[name], "ids", fmt::format("{}[\"{}\"]", sp, name));
    if (!ids.is_array()) fail("{}: {}[\"{}\"].ids must be an array", r.label, sp, name);
    for (const json& id : ids) {
      if (!id.is_number_integer()) fail("{}: {}[\"{}\"].ids must hold integers", r.label, sp, name);
      (after ? s.suffix_ids : s.prefix_ids).push_back(id.get<int32_t>());
    }
  }
}

std::string name_of(const PreTokenizerSpec& p) {
  if (p.regexes.size() == 1) {
    if (p.regexes[0] == kLlama3Regex) return "llama-bpe";
    if (p.regexes[0] == kQwen2Regex) return "qwen2";
    if (p.regexes[0] == kGpt2Regex) return "default";
  }
  return "custom";
}

TokenizerSpec read_spec(const json& root, const std::string& label) {
  Reader r{label};
  TokenizerSpec s;
  s.label = label;
  s.tokens_key = "model.vocab";
  s.merges_key = "model.merges";
  if (!root.is_object()) fail("{}: tokenizer.json must be a JSON object", label);
  const json& model = r.need(root, "model", "tokenizer.json");
  if (const json* t = r.opt(model, "type")) {
    std::string type = r.str(*t, "model.type");
    if (type != "BPE")
      fail("{}: model.type is \"{}\"; only byte-level BPE tokenizers are supported", label, type);
  }
  if (r.flag(model, "byte_fallback", false, "model"))
    fail(
        "{}: model.byte_fallback is true (a SentencePiece-style BPE); only byte-level BPE is "
        "supported",
        label);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = r.opt(model, key);
    if (v && !(v->is_string() && v->get<std::string>().empty()))
      fail("{}: model.{} is set; byte-level BPE does not use it", label, key);
  }
  s.ignore_merges = r.flag(model, "ignore_merges", false, "model");

  const json& vocab = r.need(model, "vocab", "model");
  if (!vocab.is_object()) fail("{}: model.vocab must be an object (token -> id)", label);
  int64_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= kMaxVocab)
      fail("{}: model.vocab[\"{}\"] must be an id in 0..{}", label, it.key(), kMaxVocab - 1);
    max_id = std::max(max_id, it->get<int64_t>());
  }
  if (const json* added = r.opt(root, "added_tokens")) {
    if (!added->is_array()) fail("{}: added_tokens must be an array", label);
    for (size_t i = 0; i < added->size(); ++i) {
      std::string at = fmt::format("added_tokens[{}]", i);
      const json& a = (*added)[i];
      const json& id = r.need(a, "id", at);
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxVocab)
        fail("{}: {}.id must be an id in 0..{}", label, at, kMaxVocab - 1);
      AddedTokenSpec t;
      t.id = id.get<int32_t>();
      t.content = r.str(r.need(a, "content", at), at + ".content");
      t.special = r.flag(a, "special", false, at);
      t.lstrip = r.flag(a, "lstrip", false, at);
      t.rstrip = r.flag(a, "rstrip", false, at);
      t.single_word = r.flag(a, "single_word", false, at);
      max_id = std::max<int64_t>(max_id, t.id);
      s.added.push_back(std::move(t));
    }
  }
  s.tokens.resize(static_cast<size_t>(max_id + 1));
  s.types.assign(s.tokens.size(), TokenType::Normal);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    std::string& slot = s.tokens[it->get<size_t>()];
    if (!slot.empty())
      fail("{}: model.vocab: \"{}\" and \"{}\" share id {}", label, slot, it.key(),
           it->get<int64_t>());
    slot = it.key();
  }

  const json& merges = r.need(model, "merges", "model");
  if (!merges.is_array()) fail("{}: model.merges must be an array", label);
  s.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {  // "a b"
      const std::string& text = m.get_ref<const std::string&>();
      size_t sp = text.find(' ');
      if (sp == std::string::npos || text.find(' ', sp + 1) != std::string::npos)
        fail("{}: model.merges[{}] \"{}\" must be two tokens separated by one space", label, i,
             text);
      s.merges.emplace_back(text.substr(0, sp), text.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      s.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail("{}: model.merges[{}] must be \"a b\" or [\"a\", \"b\"], found {}", label, i,
           m.dump().substr(0, 80));
    }
  }

  if (const json* n = r.opt(root, "normalizer")) read_normalizer(r, *n, "normalizer", s);
  const json* pre = r.opt(root, "pre_tokenizer");
  if (!pre) fail("{}: pre_tokenizer is missing; byte-level BPE needs a ByteLevel step", label);
  bool byte_level = false;
  read_pre_tokenizer(r, *pre, "pre_tokenizer", s, byte_level);
  if (!byte_level)
    fail("{}: pre_tokenizer has no ByteLevel step; only byte-level BPE is supported", label);
  s.pre.name = name_of(s.pre);
  if (const json* d = r.opt(root, "decoder")) check_decoder(r, *d, "decoder");
  if (const json* p = r.opt(root, "post_processor"))
    read_post_processor(r, *p, "post_processor", s);
  s.eos_names = {"<|end_of_text|>", "<|endoftext|>", "</s>"};
  return s;
}

// tokenizer_config.json's eos_token: "name" or {"content": "name", ...}.
std::string config_eos(const std::filesystem::path& dir) {
  std::filesystem::path p = dir / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return {};
  json cfg = read_json_file(p, OpenLimits{}, "tokenizer_config.json");
  if (!cfg.is_object()) return {};
  auto it = cfg.find("eos_token");
  if (it == cfg.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return {};
}

}  // namespace

Tokenizer Tokenizer::from_hf_json(const std::filesystem::path& path) {
  json root = read_json_file(path, OpenLimits{}, "tokenizer.json");
  TokenizerSpec spec = read_spec(root, path.string());
  root = json();  // free the DOM before the maps are built
  std::string eos = config_eos(path.parent_path());
  if (!eos.empty()) spec.eos_names.insert(spec.eos_names.begin(), eos);
  return TokenizerBuilder::build(std::move(spec));
}

Tokenizer Tokenizer::from_hf_json_text(std::string_view text, std::string_view label) {
  json root;
  check_json_depth(text, fmt::format("{}: tokenizer.json", label));
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: tokenizer.json is not valid JSON: {}", label, e.what());
  }
  return TokenizerBuilder::build(read_spec(root, std::string(label)));
}

}  // namespace rlx
