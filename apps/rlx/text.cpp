#include "text.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "rlx/error.h"

namespace rlx::cli {

namespace fs = std::filesystem;

Tokenizer load_tokenizer(const fs::path& weights, const WeightFile* file,
                         const std::string& tokenizer_json) {
  if (!tokenizer_json.empty()) return Tokenizer::from_hf_json(tokenizer_json);
  if (fs::is_directory(weights)) {
    if (!fs::exists(weights / "tokenizer.json"))
      fail("{} has no tokenizer.json: pass --tokenizer PATH", weights.string());
    return Tokenizer::from_hf_json(weights / "tokenizer.json");
  }
  if (!file) fail("no tokenizer for {}: pass --tokenizer PATH", weights.string());
  if (!file->meta("tokenizer.ggml.model"))
    fail("{} has no tokenizer (no tokenizer.ggml.* metadata): pass --tokenizer tokenizer.json",
         weights.string());
  return Tokenizer::from_gguf(*file);
}

namespace {

// tokenizer_config.json's chat_template: a string, or a list of {name, template} (the one
// named "default").
std::string hf_chat_template(const fs::path& dir) {
  const fs::path cfg = dir / "tokenizer_config.json";
  std::ifstream in(cfg);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: not JSON: {}", cfg.string(), e.what());
  }
  if (!j.is_object() || !j.contains("chat_template")) return {};
  const auto& t = j["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array())
    for (const auto& e : t)
      if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
          e["template"].is_string())
        return e["template"].get<std::string>();
  return {};
}

}  // namespace

ChatTemplate load_chat_template(const fs::path& weights, const WeightFile& file,
                                const std::string& family, std::string* source) {
  std::string text, label;
  if (fs::is_directory(weights)) {
    text = hf_chat_template(weights);
    label = (weights / "tokenizer_config.json").string();
  } else if (const MetaValue* v = file.meta("tokenizer.chat_template")) {
    if (const std::string* s = v->as_string()) text = *s;
    label = weights.string() + ": tokenizer.chat_template";
  }
  if (!text.empty()) {
    if (source) *source = label;
    return ChatTemplate::parse(text, label);
  }
  const std::string builtin = family == "llama32" ? "llama3" : family;
  if (source) *source = "built-in " + builtin;
  return ChatTemplate::builtin(builtin);
}

}  // namespace rlx::cli
