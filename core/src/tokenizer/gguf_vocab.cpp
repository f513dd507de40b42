// GGUF tokenizer.ggml.* metadata -> TokenizerSpec (byte-level BPE, model "gpt2" only).
//
//   tokenizer.ggml.model        "gpt2"
//   tokenizer.ggml.tokens       array<string>, in the byte alphabet ("Ġthe")
//   tokenizer.ggml.token_type   array<int> (optional): 1 normal, 3 control, 4 user-defined, ...
//   tokenizer.ggml.merges       array<string> "a b", in rank order
//   tokenizer.ggml.pre          "llama-bpe", "qwen2", ... (optional, "default": the GPT-2 regex)
//   tokenizer.ggml.bos_token_id / eos_token_id / add_bos_token / add_eos_token
//
// Control and user-defined tokens become added tokens (matched in the raw text); control ones
// are special. As in llama.cpp, "llama-bpe" sets ignore_merges and adds BOS unless
// add_bos_token says otherwise; unlike llama.cpp, "qwen2" normalizes to NFC, as the model's HF
// tokenizer.json does.
#include "rlx/error.h"
#include "rlx/weights.h"
#include "tokenizer_impl.h"

namespace rlx {
namespace {

struct PreInfo {
  const char* regex;
  bool nfc, ignore_merges, add_bos;
};

bool lookup_pre(const std::string& name, PreInfo& info) {
  if (name == "default" || name == "gpt2" || name == "gpt-2") {
    info = {kGpt2Regex, false, false, false};
  } else if (name == "llama-bpe" || name == "llama3" || name == "llama-v3" || name == "smaug-bpe") {
    info = {kLlama3Regex, false, true, true};
  } else if (name == "qwen2") {
    info = {kQwen2Regex, true, false, false};
  } else {
    return false;
  }
  return true;
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const WeightFile& f) {
  const std::string label = f.path().string();
  auto need = [&](const char* key) -> const MetaValue& {
    const MetaValue* v = f.meta(key);
    if (!v) fail("{}: {} is missing", label, key);
    return *v;
  };
  const MetaValue* model = f.meta("tokenizer.ggml.model");
  if (!model) fail("{}: no tokenizer in this file (tokenizer.ggml.model is missing)", label);
  if (!model->is_string())
    fail("{}: tokenizer.ggml.model must be a string, found {}", label, model->describe());
  if (*model->as_string() != "gpt2")
    fail(
        "{}: tokenizer.ggml.model is \"{}\"; only byte-level BPE (\"gpt2\") tokenizers are "
        "supported",
        label, *model->as_string());

  TokenizerSpec s;
  s.label = label;
  s.tokens_key = "tokenizer.ggml.tokens";
  s.merges_key = "tokenizer.ggml.merges";

  const MetaValue& tokens = need("tokenizer.ggml.tokens");
  if (!tokens.is_array() || tokens.array_type() != MetaType::String)
    fail("{}: tokenizer.ggml.tokens must be an array of strings, found {}", label,
         tokens.describe());
  const auto& tok_items = *tokens.as_array();
  s.tokens.reserve(tok_items.size());
  for (const MetaValue& t : tok_items) s.tokens.push_back(*t.as_string());
  s.types.assign(s.tokens.size(), TokenType::Normal);

  if (const MetaValue* types = f.meta("tokenizer.ggml.token_type")) {
    const auto* items = types->as_array();
    if (!items || items->size() != s.tokens.size())
      fail(
          "{}: tokenizer.ggml.token_type must be an int array of {} entries (one per token), "
          "found {}",
          label, s.tokens.size(), types->describe());
    for (size_t i = 0; i < items->size(); ++i) {
      auto v = (*items)[i].as_int();
      if (!v || *v < 0 || *v > 6)
        fail("{}: tokenizer.ggml.token_type[{}] is {}, not a token type (0..6)", label, i,
             (*items)[i].describe());
      s.types[i] = static_cast<TokenType>(*v);
      if (s.types[i] == TokenType::Control || s.types[i] == TokenType::UserDefined) {
        AddedTokenSpec a;
        a.id = static_cast<int32_t>(i);
        a.content = s.tokens[i];
        a.special = s.types[i] == TokenType::Control;
        s.added.push_back(std::move(a));
      }
    }
  }

  const MetaValue& merges = need("tokenizer.ggml.merges");
  if (!merges.is_array() ||
      (merges.array_type() != MetaType::String && !merges.as_array()->empty()))
    fail("{}: tokenizer.ggml.merges must be an array of strings, found {}", label,
         merges.describe());
  const auto& merge_items = *merges.as_array();
  s.merges.reserve(merge_items.size());
  for (size_t i = 0; i < merge_items.size(); ++i) {
    const std::string& m = *merge_items[i].as_string();
    size_t sp = m.find(' ');
    if (sp == std::string::npos || m.find(' ', sp + 1) != std::string::npos)
      fail("{}: tokenizer.ggml.merges[{}] \"{}\" must be two tokens separated by one space", label,
           i, m);
    s.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }

  std::string pre = "default";
  if (const MetaValue* p = f.meta("tokenizer.ggml.pre")) {
    if (!p->is_string())
      fail("{}: tokenizer.ggml.pre must be a string, found {}", label, p->describe());
    pre = *p->as_string();
  }
  PreInfo info;
  if (!lookup_pre(pre, info))
    fail(
        "{}: tokenizer.ggml.pre \"{}\" is not supported (supported: default, gpt2, llama-bpe, "
        "llama3, smaug-bpe, qwen2)",
        label, pre);
  s.pre.name = pre == "llama3" || pre == "llama-v3" ? "llama-bpe" : pre;
  s.pre.regexes = {info.regex};
  s.nfc = info.nfc;
  s.ignore_merges = info.ignore_merges;

  auto id_key = [&](const char* key) -> int32_t {
    const MetaValue* v = f.meta(key);
    if (!v) return -1;
    auto id = v->as_int();
    if (!id || *id < 0 || *id >= static_cast<int64_t>(s.tokens.size()))
      fail("{}: {} is {}, not a token id (0..{})", label, key, v->describe(), s.tokens.size() - 1);
    return static_cast<int32_t>(*id);
  };
  auto flag = [&](const char* key, bool dflt) {
    const MetaValue* v = f.meta(key);
    if (!v) return dflt;
    auto b = v->as_bool();
    if (!b) fail("{}: {} must be a bool, found {}", label, key, v->describe());
    return *b;
  };
  int32_t bos = id_key("tokenizer.ggml.bos_token_id");
  s.eos = id_key("tokenizer.ggml.eos_token_id");
  if (flag("tokenizer.ggml.add_bos_token", info.add_bos) && bos >= 0) s.prefix_ids = {bos};
  if (flag("tokenizer.ggml.add_eos_token", false) && s.eos >= 0) s.suffix_ids = {s.eos};
  return TokenizerBuilder::build(std::move(s));
}

}  // namespace rlx
