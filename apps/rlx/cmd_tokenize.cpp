// `rlx tokenize (--weights M | --tokenizer T)`: text on stdin -> token ids as a JSON array.
//   --jsonl     each input line is {"text": ...}; each output line {"ids": [...]}, in order
//   --no-special  special-token strings in the text are plain text
//   --add-bos   prepend BOS (when the tokenizer has one)
//   --decode    the other way: a JSON array of ids -> the text (--jsonl: {"ids"} -> {"text"})
// The tokenizer comes from a GGUF file's tokenizer.ggml.* metadata, a model directory's
// tokenizer.json, or --tokenizer (a tokenizer.json, which wins over --weights).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "rlx/error.h"
#include "rlx/tokenizer.h"
#include "rlx/weights.h"
#include "text.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Tokenizer tokenizer_for(const cxxopts::ParseResult& r) {
  const std::string json_path = r.count("tokenizer") ? r["tokenizer"].as<std::string>() : "";
  if (!json_path.empty()) return load_tokenizer({}, nullptr, json_path);
  if (!r.count("weights"))
    fail("rlx tokenize: give --weights MODEL (.gguf or a model directory) or --tokenizer "
         "tokenizer.json");
  const fs::path w = r["weights"].as<std::string>();
  if (fs::is_directory(w)) return load_tokenizer(w, nullptr, "");
  auto f = WeightFile::open(w);
  return load_tokenizer(w, f.get(), "");
}

std::string ids_json(const std::vector<int32_t>& ids) { return json(ids).dump(); }

std::vector<int32_t> ids_of(const json& j, std::string_view where) {
  if (!j.is_array()) fail("rlx tokenize --decode: {}: expected a JSON array of ids", where);
  std::vector<int32_t> ids;
  for (const json& v : j) {
    if (!v.is_number_integer())
      fail("rlx tokenize --decode: {}: {} is not an integer id", where, v.dump());
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

json parse_line(const std::string& line, size_t n) {
  try {
    return json::parse(line);
  } catch (const json::parse_error& e) {
    fail("rlx tokenize --jsonl: line {}: not JSON: {}", n, e.what());
  }
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  cxxopts::Options opts("rlx tokenize",
                        "text on stdin -> token ids (a JSON array); --decode for ids -> text");
  add_common_flags(opts);
  opts.add_options()("weights", "a .gguf file (tokenizer.ggml.*) or a model directory",
                     cxxopts::value<std::string>(), "PATH")(
      "tokenizer", "a Hugging Face tokenizer.json", cxxopts::value<std::string>(), "PATH")(
      "no-special", "treat special-token strings in the text as plain text")(
      "add-bos", "prepend the BOS token when the tokenizer has one")(
      "jsonl", "one JSON object per line: {\"text\": ...} in, {\"ids\": [...]} out")(
      "decode", "ids in (a JSON array; --jsonl: {\"ids\": [...]}), text out")(
      "skip-special", "with --decode: drop special tokens from the text");
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  apply_common_flags(r);
  const Tokenizer tok = tokenizer_for(r);
  EncodeOptions eo;
  eo.add_bos = r.count("add-bos") > 0;
  eo.parse_special = r.count("no-special") == 0;
  const bool decode = r.count("decode") > 0, skip = r.count("skip-special") > 0;

  if (!r.count("jsonl")) {
    std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (decode) {
      json j;
      try {
        j = json::parse(in);
      } catch (const json::parse_error& e) {
        fail("rlx tokenize --decode: stdin is not JSON: {}", e.what());
      }
      const std::string text = tok.decode(ids_of(j, "stdin"), skip);
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::printf("%s\n", ids_json(tok.encode(in, eo)).c_str());
    }
    return 0;
  }
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    if (line.empty()) continue;
    const json j = parse_line(line, n);
    const std::string where = "line " + std::to_string(n);
    if (decode) {
      if (!j.is_object() || !j.contains("ids"))
        fail("rlx tokenize --decode --jsonl: {}: expected {{\"ids\": [...]}}", where);
      const json out = {{"text", tok.decode(ids_of(j["ids"], where), skip)}};
      std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    } else {
      if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
        fail("rlx tokenize --jsonl: {}: expected {{\"text\": \"...\"}}", where);
      std::printf("{\"ids\":%s}\n", ids_json(tok.encode(j["text"].get<std::string>(), eo)).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace rlx::cli
