// Element types: names, sizes and GGUF-style block geometry.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "rlx/plugin_abi.h"

namespace rlx {

using DType = rlx_dtype;

// "f32", "q4_k", ...; "dtype#N" for an unknown id.
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);
// Elements per block (1 for plain types) and bytes per block.
int64_t dtype_block_elems(DType t);
int64_t dtype_block_bytes(DType t);
bool dtype_is_quantized(DType t);
bool dtype_is_known(uint32_t t);
// Bytes for `elems` elements laid out in rows of `row_elems`; throws if a row is not a whole
// number of blocks.
uint64_t dtype_bytes(DType t, int64_t elems);

}  // namespace rlx
