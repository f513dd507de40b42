// GGUF v2/v3 reader over mmap. Layout (little-endian):
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv
//   n_kv x  { string key, u32 value_type, value }         strings: u64 length + bytes
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   padding to general.alignment (default 32), then the data section; `offset` is relative to it.
// Every count and length is checked against the bytes left before anything is reserved, so a
// corrupt header costs an error message, not a crash or a giant allocation.
#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "mmap_file.h"
#include "rlx/error.h"
#include "rlx/gguf.h"

namespace rlx {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader memcpy's little-endian fields");

constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;        // nested arrays; real files use 1
constexpr uint64_t kMinTensorInfo = 24;  // empty name (8) + n_dims (4) + type (4) + offset (8)
constexpr uint64_t kMinKv = 13;          // empty key (8) + type (4) + a u8/bool value (1)

uint64_t min_value_bytes(MetaType t) {
  switch (t) {
    case MetaType::U8:
    case MetaType::I8:
    case MetaType::Bool: return 1;
    case MetaType::U16:
    case MetaType::I16: return 2;
    case MetaType::U32:
    case MetaType::I32:
    case MetaType::F32: return 4;
    case MetaType::String:
    case MetaType::U64:
    case MetaType::I64:
    case MetaType::F64: return 8;
    case MetaType::Array: return 12;  // element type + count
  }
  return 1;
}

class GgufFile : public WeightFile {
 public:
  GgufFile(const std::filesystem::path& path, const OpenLimits& limits)
      : WeightFile("gguf", path),
        map_(std::make_shared<MmapFile>(path)),
        base_(map_->data()),
        size_(map_->size()),
        file_(path.string()),
        limits_(limits) {
    keep_mapped(map_);
    parse();
  }

 private:
  struct Info {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t offset;
    uint64_t nbytes;
    uint64_t info_pos;  // where its tensor info starts, for messages
  };

  // ---- errors: "<file>: <where> (offset N): <what>" ----
  template <typename... Args>
  [[noreturn]] void bad(uint64_t at, fmt::format_string<Args...> f, Args&&... args) const {
    fail("{}: {} (offset {}): {}", file_, where_, at, fmt::format(f, std::forward<Args>(args)...));
  }

  uint64_t left() const { return size_ - pos_; }

  void need(uint64_t n, std::string_view what) const {
    if (n > left())
      bad(pos_,
          "truncated: {} needs {} bytes but only {} are left in the {}-byte file; the file is "
          "incomplete, download or convert it again",
          what, n, left(), size_);
  }

  template <typename T>
  T get(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string get_string(std::string_view what) {
    uint64_t at = pos_;
    uint64_t n = get<uint64_t>(what);
    if (n > limits_.max_string)
      bad(at, "{} is {} bytes long, over the {}-byte limit; the file is corrupt", what, n,
          limits_.max_string);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }

  MetaValue get_value(uint32_t type, int depth) {
    uint64_t at = pos_;
    switch (static_cast<MetaType>(type)) {
      case MetaType::U8: return MetaValue::u8(get<uint8_t>("a u8 value"));
      case MetaType::I8: return MetaValue::i8(get<int8_t>("an i8 value"));
      case MetaType::U16: return MetaValue::u16(get<uint16_t>("a u16 value"));
      case MetaType::I16: return MetaValue::i16(get<int16_t>("an i16 value"));
      case MetaType::U32: return MetaValue::u32(get<uint32_t>("a u32 value"));
      case MetaType::I32: return MetaValue::i32(get<int32_t>("an i32 value"));
      case MetaType::U64: return MetaValue::u64(get<uint64_t>("a u64 value"));
      case MetaType::I64: return MetaValue::i64(get<int64_t>("an i64 value"));
      case MetaType::F32: return MetaValue::f32(get<float>("an f32 value"));
      case MetaType::F64: return MetaValue::f64(get<double>("an f64 value"));
      case MetaType::Bool: {
        uint8_t b = get<uint8_t>("a bool value");
        if (b > 1) bad(at, "bool value is {}; GGUF bools are 0 or 1", b);
        return MetaValue::boolean(b != 0);
      }
      case MetaType::String: return MetaValue::string(get_string("a string value"));
      case MetaType::Array: return get_array(depth);
    }
    bad(at, "unknown value type {} (GGUF defines 0..12); the file is corrupt or newer than rlx",
        type);
  }

  MetaValue get_array(int depth) {
    uint64_t at = pos_;
    if (depth >= kMaxArrayDepth) bad(at, "arrays nested deeper than {}", kMaxArrayDepth);
    uint32_t elem = get<uint32_t>("an array's element type");
    if (!meta_type_is_known(elem))
      bad(at, "array of unknown value type {} (GGUF defines 0..12); the file is corrupt", elem);
    uint64_t count = get<uint64_t>("an array's length");
    uint64_t min = min_value_bytes(static_cast<MetaType>(elem));
    if (count > limits_.max_array)
      bad(at, "array of {} {} items, over the limit of {}; the file is corrupt", count,
          meta_type_name(static_cast<MetaType>(elem)), limits_.max_array);
    if (count > left() / min)
      bad(at,
          "array of {} {} items needs at least {} bytes but only {} are left; the file is "
          "truncated or corrupt",
          count, meta_type_name(static_cast<MetaType>(elem)), count * min, left());
    std::vector<MetaValue> items;
    items.reserve(count);
    for (uint64_t i = 0; i < count; ++i) items.push_back(get_value(elem, depth + 1));
    return MetaValue::array(static_cast<MetaType>(elem), std::move(items));
  }

  void parse_header(uint64_t& n_tensors, uint64_t& n_kv) {
    where_ = "header";
    need(4, "the magic");
    if (std::memcmp(base_, "GGUF", 4) != 0)
      bad(0,
          "not a GGUF file: the magic is {:02x} {:02x} {:02x} {:02x}, expected 47 47 55 46 "
          "(\"GGUF\")",
          base_[0], base_[1], base_[2], base_[3]);
    pos_ = 4;
    uint32_t version = get<uint32_t>("the version");
    if (version == 1)
      bad(4,
          "GGUF version 1 is not supported (it predates 64-bit counts); convert the model "
          "again with a current llama.cpp");
    if (version != 2 && version != 3) {
      if ((version & 0xffff) == 0 && __builtin_bswap32(version) <= 3)
        bad(4, "this is a big-endian GGUF (version bytes {:08x}); rlx reads little-endian files",
            version);
      bad(4, "GGUF version {} is not supported (rlx reads versions 2 and 3)", version);
    }
    gguf_version_ = version;
    uint64_t at = pos_;
    n_tensors = get<uint64_t>("the tensor count");
    n_kv = get<uint64_t>("the metadata count");
    if (n_tensors > limits_.max_tensors)
      bad(at, "the header claims {} tensors, over the limit of {}; the header is corrupt",
          n_tensors, limits_.max_tensors);
    if (n_kv > limits_.max_kv)
      bad(at + 8,
          "the header claims {} metadata entries, over the limit of {}; the header is corrupt",
          n_kv, limits_.max_kv);
    // Infos need >= 24 bytes each and key/values >= 13: counts that cannot fit are corrupt.
    if (n_kv > left() / kMinKv)
      bad(at + 8,
          "the header claims {} metadata entries but only {} bytes follow; the file is truncated "
          "or corrupt",
          n_kv, left());
    if (n_tensors > left() / kMinTensorInfo)
      bad(at,
          "the header claims {} tensors but only {} bytes follow; the file is truncated or corrupt",
          n_tensors, left());
  }

  void parse_kv(uint64_t n_kv) {
    for (uint64_t i = 0; i < n_kv; ++i) {
      uint64_t at = pos_;
      where_ = fmt::format("metadata entry #{}", i);
      std::string key = get_string("the key");
      where_ = fmt::format("metadata '{}'", key);
      if (metadata_.count(key)) bad(at, "the key appears twice");
      uint32_t type = get<uint32_t>("the value type");
      MetaValue v = get_value(type, 0);
      metadata_.emplace(std::move(key), std::move(v));
    }
  }

  uint64_t alignment() {
    const MetaValue* a = meta("general.alignment");
    if (!a) return kGgufDefaultAlignment;
    auto n = a->as_uint();
    if (!a->is_int() || !n || *n == 0 || (*n & (*n - 1)) != 0 || *n > (1u << 30))
      fail("{}: metadata 'general.alignment' is {}; it must be a power of two (GGUF default 32)",
           file_, a->describe());
    return *n;
  }

  Info parse_info(uint64_t i, std::set<std::string, std::less<>>& seen) {
    Info t;
    t.info_pos = pos_;
    where_ = fmt::format("tensor info #{}", i);
    t.name = get_string("the tensor name");
    where_ = fmt::format("tensor '{}'", t.name);
    if (seen.count(t.name)) bad(t.info_pos, "the tensor name appears twice");
    seen.insert(t.name);

    uint64_t at = pos_;
    uint32_t n_dims = get<uint32_t>("the dimension count");
    if (n_dims > kMaxDims) bad(at, "{} dimensions; GGUF tensors have at most {}", n_dims, kMaxDims);
    int64_t ne[kMaxDims] = {1, 1, 1, 1};
    int64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      at = pos_;
      ne[d] = get<int64_t>("a dimension");
      if (ne[d] <= 0)
        bad(at, "dimension ne[{}] is {}; every dimension must be at least 1", d, ne[d]);
      if (__builtin_mul_overflow(elems, ne[d], &elems))
        bad(at, "the element count overflows 64 bits (ne[{}] = {})", d, ne[d]);
    }
    at = pos_;
    uint32_t type = get<uint32_t>("the tensor type");
    auto dt = dtype_from_ggml(type);
    if (!dt)
      bad(at,
          "ggml type {} ({}) is not supported; rlx reads f32, f16, bf16, i8, i32, q4_0, q4_1, "
          "q5_0, q5_1, q8_0 and q2_K..q8_K: convert or quantize the model to one of those",
          type, ggml_type_name(type));
    t.dtype = *dt;
    int64_t block = dtype_block_elems(t.dtype);
    if (ne[0] % block != 0)
      bad(at, "row length ne[0] = {} is not a whole number of {} blocks ({} elements each)", ne[0],
          dtype_name(t.dtype), block);
    // An f32 tensor of 2^62 elements would need 2^64 bytes: check rather than wrap.
    if (__builtin_mul_overflow(static_cast<uint64_t>(elems / block),
                               static_cast<uint64_t>(dtype_block_bytes(t.dtype)), &t.nbytes))
      bad(at, "the byte size overflows 64 bits");
    t.offset = get<uint64_t>("the data offset");
    for (uint32_t d = n_dims; d-- > 0;) t.shape.push_back(ne[d]);  // outermost first
    return t;
  }

  void place_data(std::vector<Info>& infos) {
    uint64_t align = alignment();
    uint64_t data_start = (pos_ + align - 1) / align * align;
    for (const Info& t : infos) {
      where_ = fmt::format("tensor '{}'", t.name);
      if (t.offset % align != 0)
        bad(t.info_pos, "data offset {} is not a multiple of the alignment {}", t.offset, align);
      uint64_t room = data_start <= size_ ? size_ - data_start : 0;
      if (t.offset > room || t.nbytes > room - t.offset)
        bad(t.info_pos,
            "its {} bytes of data at {} + {} run past the end of the {}-byte file; the file is "
            "truncated, download or convert it again",
            t.nbytes, data_start, t.offset, size_);
    }
    std::vector<const Info*> by_offset;
    for (const Info& t : infos) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const Info* a, const Info* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const Info& a = *by_offset[i - 1];
      const Info& b = *by_offset[i];
      if (a.offset + a.nbytes > b.offset)
        fail(
            "{}: tensors '{}' (data [{}, {})) and '{}' (data [{}, {})) overlap; the file is "
            "corrupt",
            file_, a.name, a.offset, a.offset + a.nbytes, b.name, b.offset, b.offset + b.nbytes);
    }
    for (Info& t : infos) {
      TensorEntry e;
      e.name = std::move(t.name);
      e.dtype = t.dtype;
      e.shape = std::move(t.shape);
      e.file_offset = data_start + t.offset;
      e.data = base_ + e.file_offset;
      e.nbytes = t.nbytes;
      e.file = file_;
      add_tensor(std::move(e));
    }
  }

  void parse() {
    uint64_t n_tensors = 0, n_kv = 0;
    parse_header(n_tensors, n_kv);
    parse_kv(n_kv);
    std::vector<Info> infos;
    infos.reserve(n_tensors);
    std::set<std::string, std::less<>> seen;
    for (uint64_t i = 0; i < n_tensors; ++i) infos.push_back(parse_info(i, seen));
    place_data(infos);
  }

  std::shared_ptr<const MmapFile> map_;
  const uint8_t* base_;
  uint64_t size_;
  std::string file_;
  OpenLimits limits_;
  uint64_t pos_ = 0;
  std::string where_;
};

}  // namespace

std::unique_ptr<WeightFile> open_gguf(const std::filesystem::path& path, const OpenLimits& limits) {
  return std::make_unique<GgufFile>(path, limits);
}

}  // namespace rlx
