// Weight files, format-neutral: a GGUF file, a safetensors file, or a Hugging Face model
// directory, memory-mapped. The rest of rlx sees tensors (zero-copy pointers into the mapping)
// and GGUF-style metadata values; it never parses a file itself. GgufWriter writes GGUF v3.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rlx/dtype.h"
#include "rlx/ops.h"

namespace rlx {

// GGUF metadata value types, numbered as in the file (0..12).
enum class MetaType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

std::string_view meta_type_name(MetaType t);  // "u32", "string", "array", ...
bool meta_type_is_known(uint32_t t);

// One metadata value. The GGUF type is kept so a value read from a file writes back unchanged.
class MetaValue {
 public:
  MetaValue() : MetaValue(MetaType::U8, Storage(std::in_place_type<uint64_t>, 0)) {}  // u8 0

  static MetaValue u8(uint8_t v) { return uint_of(MetaType::U8, v); }
  static MetaValue i8(int8_t v) { return int_of(MetaType::I8, v); }
  static MetaValue u16(uint16_t v) { return uint_of(MetaType::U16, v); }
  static MetaValue i16(int16_t v) { return int_of(MetaType::I16, v); }
  static MetaValue u32(uint32_t v) { return uint_of(MetaType::U32, v); }
  static MetaValue i32(int32_t v) { return int_of(MetaType::I32, v); }
  static MetaValue u64(uint64_t v) { return uint_of(MetaType::U64, v); }
  static MetaValue i64(int64_t v) { return int_of(MetaType::I64, v); }
  static MetaValue f32(float v) { return float_of(MetaType::F32, v); }
  static MetaValue f64(double v) { return float_of(MetaType::F64, v); }
  static MetaValue boolean(bool v) {
    return MetaValue(MetaType::Bool, Storage(std::in_place_type<bool>, v));
  }
  static MetaValue string(std::string v) {
    return MetaValue(MetaType::String, Storage(std::in_place_type<std::string>, std::move(v)));
  }
  // Every item must have type `elem` (GGUF arrays are homogeneous); throws otherwise.
  static MetaValue array(MetaType elem, std::vector<MetaValue> items);

  MetaType type() const { return type_; }
  MetaType array_type() const { return elem_; }  // the element type; meaningful for arrays only

  bool is_int() const;  // u8..i64 (not bool)
  bool is_float() const { return type_ == MetaType::F32 || type_ == MetaType::F64; }
  bool is_bool() const { return type_ == MetaType::Bool; }
  bool is_string() const { return type_ == MetaType::String; }
  bool is_array() const { return type_ == MetaType::Array; }

  std::optional<int64_t> as_int() const;    // ints and bool; nullopt for a u64 above INT64_MAX
  std::optional<uint64_t> as_uint() const;  // non-negative ints and bool
  std::optional<double> as_float() const;   // floats and ints
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const std::vector<MetaValue>* as_array() const;

  // "u32 2048", "string \"llama\"", "array<string>[128256]". With max_items > 0, arrays also
  // show their first items: "array<i32>[5] [1, 2, 3, ...]". Long strings are cut short.
  std::string describe() const { return describe(0); }
  std::string describe(size_t max_items) const;

  bool operator==(const MetaValue& o) const;

 private:
  using Storage =
      std::variant<int64_t, uint64_t, double, bool, std::string, std::vector<MetaValue>>;
  MetaValue(MetaType t, Storage v) : type_(t), elem_(MetaType::U8), v_(std::move(v)) {}
  static MetaValue uint_of(MetaType t, uint64_t v) {
    return MetaValue(t, Storage(std::in_place_type<uint64_t>, v));
  }
  static MetaValue int_of(MetaType t, int64_t v) {
    return MetaValue(t, Storage(std::in_place_type<int64_t>, v));
  }
  static MetaValue float_of(MetaType t, double v) {
    return MetaValue(t, Storage(std::in_place_type<double>, v));
  }

  MetaType type_;
  MetaType elem_;
  Storage v_;
};

struct TensorEntry {
  std::string name;
  DType dtype = RLX_F32;
  Shape shape;                    // outermost first: GGUF ne = [in, out] becomes [out, in]
  const uint8_t* data = nullptr;  // into the mapping, zero copy
  uint64_t nbytes = 0;
  std::string file;          // the file holding the data (differs between shards)
  uint64_t file_offset = 0;  // absolute offset of the data in that file

  int64_t elems() const;
};

// Caps on counts read from a file, so a corrupt or hostile header cannot make the reader
// allocate gigabytes before it notices. Every count is also checked against the bytes left.
struct OpenLimits {
  uint64_t max_tensors = 1'000'000;
  uint64_t max_kv = 1'000'000;
  uint64_t max_string = 64ull << 20;
  uint64_t max_array = 1ull << 32;
  uint64_t max_json = 100ull << 20;  // a safetensors header or config.json
};

class MmapFile;

class WeightFile {
 public:
  // A .gguf file, a .safetensors file (plus config.json next to it, if any), a
  // model.safetensors.index.json, or a Hugging Face model directory (config.json +
  // model.safetensors or model.safetensors.index.json shards). Throws rlx::Error naming the file
  // and what is wrong.
  static std::unique_ptr<WeightFile> open(const std::filesystem::path& path,
                                          const OpenLimits& limits = {});
  virtual ~WeightFile();
  WeightFile(const WeightFile&) = delete;
  WeightFile& operator=(const WeightFile&) = delete;

  const std::string& format() const { return format_; }  // "gguf" | "safetensors"
  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  const TensorEntry* find(std::string_view name) const;
  // GGUF: its key/values. HF: config.json flattened to dotted keys ("hidden_size",
  // "rope_scaling.factor"; arrays as arrays), plus __metadata__ entries as "safetensors.<key>".
  const MetaValue* meta(std::string_view key) const;
  const std::map<std::string, MetaValue, std::less<>>& metadata() const { return metadata_; }
  uint64_t mapped_bytes() const;
  uint32_t gguf_version() const { return gguf_version_; }  // 0 for safetensors

 protected:
  WeightFile(std::string format, std::filesystem::path path)
      : format_(std::move(format)), path_(std::move(path)) {}
  // Readers fill these; add tensors through add_tensor (it keeps the name index).
  void add_tensor(TensorEntry t);
  void keep_mapped(std::shared_ptr<const MmapFile> m) { maps_.push_back(std::move(m)); }

  std::string format_;
  std::filesystem::path path_;
  std::map<std::string, MetaValue, std::less<>> metadata_;
  uint32_t gguf_version_ = 0;

 private:
  std::vector<TensorEntry> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::vector<std::shared_ptr<const MmapFile>> maps_;
};

// Writes GGUF v3. Metadata keeps insertion order; tensor data is laid out in add order, each
// aligned. The output appears atomically (temp file in the same directory, then rename): a
// failure never leaves a half-written file under `path`.
class GgufWriter {
 public:
  // Sets (or replaces) a key. "general.alignment" is managed by write().
  void set(std::string key, MetaValue v);
  // `data` is referenced, not copied: it must stay valid until write() returns. Checks the name
  // is new, the shape (1..4 positive dims, rows of whole blocks) and nbytes against the dtype.
  void add_tensor(std::string name, DType dtype, Shape shape, const void* data, uint64_t nbytes);
  void write(const std::filesystem::path& path, uint32_t alignment = 32) const;

 private:
  struct PendingTensor {
    std::string name;
    DType dtype;
    Shape shape;
    const void* data;
    uint64_t nbytes;
  };
  std::vector<std::pair<std::string, MetaValue>> kv_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace rlx
