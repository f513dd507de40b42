// GGUF specifics: the ggml tensor type numbering and the reader entry point. Most code should
// use WeightFile::open (weights.h), which picks the reader by the file's magic.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "rlx/weights.h"

namespace rlx {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kGgufDefaultAlignment = 32;

// ggml type id -> rlx dtype; nullopt for ids rlx cannot compute with (iq*, q8_1, f64, ...).
std::optional<DType> dtype_from_ggml(uint32_t ggml_type);
uint32_t ggml_type_of(DType t);               // throws for a dtype GGUF has no id for
std::string_view ggml_type_name(uint32_t t);  // "q4_K", "iq2_xxs", ...; "unknown" if not ggml's

// Parses a GGUF v2/v3 file over mmap. Throws rlx::Error naming the file, the offset and the
// key or tensor at fault.
std::unique_ptr<WeightFile> open_gguf(const std::filesystem::path& path,
                                      const OpenLimits& limits = {});

}  // namespace rlx
