// safetensors reader over mmap. A file is: u64 header length N (little-endian), N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [out, in], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"k": "v"}}, then the data; offsets are relative to the byte after the JSON.
// A Hugging Face directory adds config.json and, when sharded, model.safetensors.index.json
// ({"weight_map": {"name": "model-00001-of-00002.safetensors", ...}}).
#include "rlx/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "mmap_file.h"
#include "rlx/error.h"
#include "rlx/log.h"
#include "safetensors_json.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "the safetensors reader memcpy's the little-endian header length");

constexpr size_t kMaxDims = 8;  // rlx models use <= 4; vision towers may carry 5-d convs

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {
    {"F32", RLX_F32}, {"F16", RLX_F16}, {"BF16", RLX_BF16}, {"I32", RLX_I32}, {"I8", RLX_I8},
};

// A non-negative JSON integer, or a message naming what it is instead.
uint64_t get_uint(const json& j, const std::string& file, const std::string& name,
                  std::string_view field) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0))
    fail("{}: tensor '{}': {} holds {} where a non-negative integer belongs", file, name, field,
         j.dump());
  return j.get<uint64_t>();
}

class SafetensorsFile : public WeightFile {
 public:
  SafetensorsFile(const fs::path& path, const OpenLimits& limits)
      : WeightFile("safetensors", path), limits_(limits) {
    fs::path dir = path;
    if (fs::is_directory(path)) {
      if (fs::exists(path / "model.safetensors.index.json"))
        read_index(path / "model.safetensors.index.json");
      else if (fs::exists(path / "model.safetensors"))
        read_shard(path / "model.safetensors");
      else
        fail(
            "{}: no model.safetensors or model.safetensors.index.json here: not a Hugging Face "
            "safetensors model directory (point rlx at the .gguf or .safetensors file instead?)",
            path.string());
    } else {
      dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
      if (path.extension() == ".json")
        read_index(path);
      else
        read_shard(path);
    }
    fs::path config = dir / "config.json";
    if (fs::exists(config))
      flatten_config(read_json_file(config, limits_, "config.json"), config.string(), metadata_);
    else  // a lone .safetensors file need not come from a model directory
      log().log(path.extension() == ".safetensors" ? spdlog::level::debug : spdlog::level::warn,
                "{}: no config.json next to the weights; model hyper-parameters are unknown",
                dir.string());
  }

 private:
  struct Range {
    uint64_t begin, end;
    const std::string* name;
  };

  // Opens one .safetensors file and adds its tensors. Returns their names.
  std::set<std::string> read_shard(const fs::path& p) {
    const std::string file = p.string();
    auto map = std::make_shared<MmapFile>(p);
    keep_mapped(map);
    const uint64_t size = map->size();
    if (size < 8)
      fail("{}: truncated: {} bytes, but a safetensors file starts with an 8-byte header length",
           file, size);
    uint64_t n = 0;
    std::memcpy(&n, map->data(), 8);
    if (n > size - 8)
      fail(
          "{}: the header length {} runs past the end of the {}-byte file; the file is truncated "
          "or not safetensors",
          file, n, size);
    if (n > limits_.max_json)
      fail("{}: the header length {} is over the {}-byte limit; the file is corrupt", file, n,
           limits_.max_json);

    // nlohmann keeps the last of duplicate keys silently: catch them while parsing.
    std::string dup;
    std::set<std::string> keys;
    auto on_event = [&](int depth, json::parse_event_t ev, json& parsed) {
      if (depth == 1 && ev == json::parse_event_t::key && dup.empty() &&
          !keys.insert(parsed.get<std::string>()).second)
        dup = parsed.get<std::string>();
      return true;
    };
    json header;
    const char* text = reinterpret_cast<const char*>(map->data() + 8);
    check_json_depth(std::string_view(text, n), file + ": the JSON header");
    try {
      header = json::parse(text, text + n, on_event);
    } catch (const json::exception& e) {
      fail("{}: the JSON header (bytes 8..{}) is invalid: {}", file, 8 + n, e.what());
    }
    if (!dup.empty()) fail("{}: tensor '{}' appears twice in the header", file, dup);
    if (!header.is_object())
      fail("{}: the JSON header is a {}, not an object; not a safetensors file", file,
           header.type_name());

    const uint64_t data_start = 8 + n;
    const uint64_t data_size = size - data_start;
    std::set<std::string> names;
    std::vector<TensorEntry> entries;
    for (const auto& [name, v] : header.items()) {
      if (name == "__metadata__") {
        read_metadata(v, file);
        continue;
      }
      if (find(name)) fail("{}: tensor '{}' is also in another shard", file, name);
      TensorEntry e = read_entry(name, v, file, data_size);
      e.file_offset += data_start;
      e.data = map->data() + e.file_offset;
      names.insert(name);
      entries.push_back(std::move(e));
    }
    check_overlaps(entries, file);
    for (auto& e : entries) add_tensor(std::move(e));
    return names;
  }

  void read_metadata(const json& v, const std::string& file) {
    if (!v.is_object()) fail("{}: __metadata__ is a {}, not an object", file, v.type_name());
    for (const auto& [k, s] : v.items())  // strings by the spec; keep anything else as JSON text
      metadata_.try_emplace("safetensors." + k,
                            MetaValue::string(s.is_string() ? s.get<std::string>() : s.dump()));
  }

  TensorEntry read_entry(const std::string& name, const json& v, const std::string& file,
                         uint64_t data_size) {
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets"))
      fail("{}: tensor '{}': expected an object with dtype, shape and data_offsets, found {}", file,
           name, v.dump().substr(0, 200));
    TensorEntry e;
    e.name = name;
    e.file = file;
    const json& dt = v["dtype"];
    std::string dt_name = dt.is_string() ? dt.get<std::string>() : dt.dump();
    auto dtype = dtype_from_safetensors(dt_name);
    if (!dtype)
      fail(
          "{}: tensor '{}' has dtype {}, which rlx does not read (it reads F32, F16, BF16, I32, "
          "I8); convert the checkpoint (for example to GGUF) first",
          file, name, dt_name);
    e.dtype = *dtype;

    const json& shape = v["shape"];
    if (!shape.is_array() || shape.size() > kMaxDims)
      fail("{}: tensor '{}': shape {} is not a list of at most {} dimensions", file, name,
           shape.dump(), kMaxDims);
    int64_t elems = 1;
    for (const json& d : shape) {
      uint64_t u = get_uint(d, file, name, "shape");
      if (u > static_cast<uint64_t>(INT64_MAX) ||
          __builtin_mul_overflow(elems, static_cast<int64_t>(u), &elems))
        fail("{}: tensor '{}': the element count of shape {} overflows", file, name, shape.dump());
      e.shape.push_back(static_cast<int64_t>(u));
    }
    uint64_t want = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(elems),
                               static_cast<uint64_t>(dtype_block_bytes(e.dtype)), &want))
      fail("{}: tensor '{}': the byte size of shape {} overflows", file, name, shape.dump());

    const json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      fail("{}: tensor '{}': data_offsets {} is not [begin, end]", file, name, off.dump());
    uint64_t begin = get_uint(off[0], file, name, "data_offsets");
    uint64_t end = get_uint(off[1], file, name, "data_offsets");
    if (begin > end || end > data_size)
      fail(
          "{}: tensor '{}': data_offsets [{}, {}] are outside the {}-byte data section; the file "
          "is truncated or corrupt",
          file, name, begin, end, data_size);
    if (end - begin != want)
      fail("{}: tensor '{}': data_offsets [{}, {}] hold {} bytes but {} {} needs {}", file, name,
           begin, end, end - begin, dt_name, shape.dump(), want);
    e.file_offset = begin;  // relative for now; the caller adds the data start
    e.nbytes = want;
    return e;
  }

  static void check_overlaps(const std::vector<TensorEntry>& entries, const std::string& file) {
    std::vector<const TensorEntry*> order;
    for (const auto& e : entries)
      if (e.nbytes) order.push_back(&e);
    std::sort(order.begin(), order.end(),
              [](auto* a, auto* b) { return a->file_offset < b->file_offset; });
    for (size_t i = 1; i < order.size(); ++i)
      if (order[i - 1]->file_offset + order[i - 1]->nbytes > order[i]->file_offset)
        fail("{}: tensors '{}' and '{}' overlap (bytes {}..{} and {}..{}); the file is corrupt",
             file, order[i - 1]->name, order[i]->name, order[i - 1]->file_offset,
             order[i - 1]->file_offset + order[i - 1]->nbytes, order[i]->file_offset,
             order[i]->file_offset + order[i]->nbytes);
  }

  void read_index(const fs::path& index_path) {
    const std::string file = index_path.string();
    json index = read_json_file(index_path, limits_, "the shard index");
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail("{}: no \"weight_map\" object: not a model.safetensors.index.json", file);
    std::map<std::string, std::vector<std::string>> by_shard;
    for (const auto& [name, shard] : index["weight_map"].items()) {
      std::string s = shard.is_string() ? shard.get<std::string>() : "";
      // A plain file name next to the index: never a path that escapes the directory.
      if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos ||
          s.find('\\') != std::string::npos)
        fail(
            "{}: weight_map entry '{}' names shard {}; expected a file name in the same "
            "directory",
            file, name, shard.dump());
      by_shard[s].push_back(name);
    }
    if (by_shard.empty()) fail("{}: weight_map is empty: no tensors", file);
    fs::path dir = index_path.parent_path().empty() ? fs::path(".") : index_path.parent_path();
    for (const auto& [shard, names] : by_shard) {
      fs::path p = dir / shard;
      if (!fs::exists(p))
        fail("{}: shard {} (holding '{}' and {} more) is missing; download it too", file,
             p.string(), names.front(), names.size() - 1);
      std::set<std::string> have = read_shard(p);
      for (const auto& n : names)
        if (!have.count(n))
          fail("{}: weight_map puts tensor '{}' in {}, but that shard does not have it", file, n,
               p.string());
    }
  }

  OpenLimits limits_;
};

}  // namespace

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.dtype;
  return std::nullopt;
}

std::unique_ptr<WeightFile> open_safetensors(const std::filesystem::path& path,
                                             const OpenLimits& limits) {
  return std::make_unique<SafetensorsFile>(path, limits);
}

}  // namespace rlx
