// JSON helpers for the safetensors reader: bounded file reads and config.json flattening.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "rlx/weights.h"

namespace rlx {

// The deepest nesting of arrays and objects accepted in a JSON document. Real files nest a few
// levels; a deeper one would overflow the stack in the recursive walks over the parsed value
// (json::dump in error messages, flatten_config, the tokenizer.json readers).
inline constexpr size_t kMaxJsonDepth = 256;

// Throws rlx::Error("<where>: ... nested deeper than 256 levels ...") when `text` nests arrays
// and objects deeper than kMaxJsonDepth (brackets inside strings do not count). Call it before
// json::parse on untrusted text; it does not otherwise validate the JSON.
void check_json_depth(std::string_view text, std::string_view where);

// Reads and parses a whole JSON file (at most limits.max_json bytes). `what` says what the file
// is for the error message ("config.json", "the shard index").
nlohmann::json read_json_file(const std::filesystem::path& path, const OpenLimits& limits,
                              std::string_view what);

// config.json -> metadata: nested objects become dotted keys ("rope_scaling.factor"), arrays
// become MetaValue arrays, nulls are left out (absent means "not set", as in transformers).
void flatten_config(const nlohmann::json& j, const std::string& file,
                    std::map<std::string, MetaValue, std::less<>>& out);

}  // namespace rlx
