// JSON helpers for the safetensors reader: bounded file reads and config.json flattening.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "rlx/weights.h"

namespace rlx {

// Reads and parses a whole JSON file (at most limits.max_json bytes). `what` says what the file
// is for the error message ("config.json", "the shard index").
nlohmann::json read_json_file(const std::filesystem::path& path, const OpenLimits& limits,
                              std::string_view what);

// config.json -> metadata: nested objects become dotted keys ("rope_scaling.factor"), arrays
// become MetaValue arrays, nulls are left out (absent means "not set", as in transformers).
void flatten_config(const nlohmann::json& j, const std::string& file,
                    std::map<std::string, MetaValue, std::less<>>& out);

}  // namespace rlx
