// safetensors specifics: the dtype names and the reader entry point. Most code should use
// WeightFile::open (weights.h).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "rlx/weights.h"

namespace rlx {

// "F32", "F16", "BF16", "I32", "I8" -> rlx dtype; nullopt for the rest (I64, U8, BOOL, F8_*, ...).
std::optional<DType> dtype_from_safetensors(std::string_view name);

// A .safetensors file (with config.json next to it, if present), a
// model.safetensors.index.json (its shards are opened), or a Hugging Face model directory.
std::unique_ptr<WeightFile> open_safetensors(const std::filesystem::path& path,
                                             const OpenLimits& limits = {});

}  // namespace rlx
