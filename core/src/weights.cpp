// MetaValue, WeightFile's common part, and the choice of reader for a path.
#include "rlx/weights.h"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <limits>

#include "mmap_file.h"
#include "rlx/error.h"
#include "rlx/gguf.h"
#include "rlx/safetensors.h"

namespace rlx {
namespace {

constexpr std::array<std::string_view, 13> kMetaTypeNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

// A string for one line of `rlx info`: quoted, control characters escaped, cut at 80 bytes
// (never inside a UTF-8 sequence).
std::string quoted(const std::string& s) {
  constexpr size_t kMax = 80;
  size_t n = s.size();
  if (n > kMax) {
    n = kMax;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  }
  std::string out = "\"";
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (n < s.size()) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

std::string array_type_str(const MetaValue& v) {
  std::string t = "array<";
  t += v.array_type() == MetaType::Array ? "array" : meta_type_name(v.array_type());
  return t + ">";
}

// The value without its type: "2048", "\"llama\"", "[1, 2, ...]".
std::string value_text(const MetaValue& v, size_t max_items) {
  if (const std::string* s = v.as_string()) return quoted(*s);
  if (const auto* a = v.as_array()) {
    std::string out = "[";
    size_t n = std::min(a->size(), max_items);
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ", ";
      out += value_text((*a)[i], max_items);
    }
    if (n < a->size()) out += n ? ", ..." : "...";
    return out + "]";
  }
  if (v.is_bool()) return *v.as_bool() ? "true" : "false";
  if (v.type() == MetaType::F32) return fmt::format("{}", static_cast<float>(*v.as_float()));
  if (v.is_float()) return fmt::format("{}", *v.as_float());
  if (v.type() == MetaType::U64 && !v.as_int()) return fmt::format("{}", *v.as_uint());
  return fmt::format("{}", *v.as_int());
}

}  // namespace

std::string_view meta_type_name(MetaType t) {
  auto i = static_cast<uint32_t>(t);
  return i < kMetaTypeNames.size() ? kMetaTypeNames[i] : "unknown";
}

bool meta_type_is_known(uint32_t t) { return t < kMetaTypeNames.size(); }

// ---- MetaValue ----

MetaValue MetaValue::array(MetaType elem, std::vector<MetaValue> items) {
  if (!meta_type_is_known(static_cast<uint32_t>(elem)))
    fail("metadata array: unknown element type {}", static_cast<uint32_t>(elem));
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].type() != elem)
      fail("metadata array of {}: item {} is a {} (GGUF arrays hold one type)",
           meta_type_name(elem), i, meta_type_name(items[i].type()));
  MetaValue v(MetaType::Array,
              Storage(std::in_place_type<std::vector<MetaValue>>, std::move(items)));
  v.elem_ = elem;
  return v;
}

bool MetaValue::is_int() const {
  switch (type_) {
    case MetaType::U8:
    case MetaType::I8:
    case MetaType::U16:
    case MetaType::I16:
    case MetaType::U32:
    case MetaType::I32:
    case MetaType::U64:
    case MetaType::I64: return true;
    default: return false;
  }
}

std::optional<int64_t> MetaValue::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v_)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<uint64_t> MetaValue::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&v_)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v_))
    return *i >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(*i)) : std::nullopt;
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> MetaValue::as_float() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&v_)) return static_cast<double>(*u);
  return std::nullopt;
}

std::optional<bool> MetaValue::as_bool() const {
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  return std::nullopt;
}

const std::string* MetaValue::as_string() const { return std::get_if<std::string>(&v_); }

const std::vector<MetaValue>* MetaValue::as_array() const {
  return std::get_if<std::vector<MetaValue>>(&v_);
}

std::string MetaValue::describe(size_t max_items) const {
  if (const auto* a = as_array()) {
    if (max_items == 0 || a->empty())
      return fmt::format("{}[{}]", array_type_str(*this), a->size());
    return fmt::format("{}[{}] {}", array_type_str(*this), a->size(), value_text(*this, max_items));
  }
  return fmt::format("{} {}", meta_type_name(type_), value_text(*this, max_items));
}

bool MetaValue::operator==(const MetaValue& o) const {
  if (type_ != o.type_) return false;
  if (type_ == MetaType::Array && elem_ != o.elem_) return false;
  return v_ == o.v_;
}

// ---- TensorEntry ----

int64_t TensorEntry::elems() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---- WeightFile ----

WeightFile::~WeightFile() = default;

const TensorEntry* WeightFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const MetaValue* WeightFile::meta(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

uint64_t WeightFile::mapped_bytes() const {
  uint64_t n = 0;
  for (const auto& m : maps_) n += m->size();
  return n;
}

void WeightFile::add_tensor(TensorEntry t) {
  // Readers check duplicates themselves (with the offset in the message); this is the backstop.
  if (index_.count(t.name)) fail("{}: tensor '{}' appears twice", t.file, t.name);
  index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));
}

std::unique_ptr<WeightFile> WeightFile::open(const std::filesystem::path& path,
                                             const OpenLimits& limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    fail(
        "{}: no such file or directory (expected a .gguf file, a .safetensors file or a "
        "Hugging Face model directory)",
        path.string());
  if (fs::is_directory(st)) return open_safetensors(path, limits);

  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, 4);
  bool is_gguf_magic = in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
  std::string ext = path.extension().string();
  if (is_gguf_magic || ext == ".gguf") return open_gguf(path, limits);
  if (ext == ".safetensors" || ext == ".json") return open_safetensors(path, limits);
  fail(
      "{}: neither a GGUF file (no 'GGUF' magic) nor a .safetensors / .json file; rlx reads "
      "GGUF files, safetensors files and Hugging Face model directories",
      path.string());
}

}  // namespace rlx
