#include "safetensors_json.h"

#include <fstream>
#include <limits>

#include "rlx/error.h"

namespace rlx {
namespace {

using nlohmann::json;

// A scalar JSON value as metadata; nullopt for null and objects (not representable as scalars).
std::optional<MetaValue> scalar(const json& j) {
  switch (j.type()) {
    case json::value_t::boolean: return MetaValue::boolean(j.get<bool>());
    case json::value_t::number_integer: return MetaValue::i64(j.get<int64_t>());
    case json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return MetaValue::i64(static_cast<int64_t>(u));
      return MetaValue::u64(u);
    }
    case json::value_t::number_float: return MetaValue::f64(j.get<double>());
    case json::value_t::string: return MetaValue::string(j.get<std::string>());
    default: return std::nullopt;
  }
}

// GGUF-style arrays hold one type: all numbers with a float among them become f64, a mix of
// kinds becomes strings (JSON text), nested arrays stay arrays.
MetaValue to_array(const json& j) {
  std::vector<MetaValue> items;
  items.reserve(j.size());
  bool all_same = true, all_numbers = true;
  for (const json& e : j) {
    MetaValue v;
    if (e.is_array()) {
      v = to_array(e);
    } else if (auto s = scalar(e)) {
      v = *s;
    } else {
      v = MetaValue::string(e.dump());  // an object or null inside an array
    }
    if (!items.empty() && v.type() != items.front().type()) all_same = false;
    if (!v.is_int() && !v.is_float()) all_numbers = false;
    items.push_back(std::move(v));
  }
  if (items.empty()) return MetaValue::array(MetaType::I64, {});
  if (all_same) {
    MetaType t = items.front().type();
    return MetaValue::array(t, std::move(items));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (all_numbers)
      items[i] = MetaValue::f64(*items[i].as_float());
    else if (!items[i].is_string())
      items[i] = MetaValue::string(j[i].dump());
  }
  return MetaValue::array(all_numbers ? MetaType::F64 : MetaType::String, std::move(items));
}

void flatten(const json& j, const std::string& key,
             std::map<std::string, MetaValue, std::less<>>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, key.empty() ? k : key + "." + k, out);
  } else if (j.is_array()) {
    out.insert_or_assign(key, to_array(j));
  } else if (auto s = scalar(j)) {
    out.insert_or_assign(key, *s);
  }
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& path, const OpenLimits& limits,
                              std::string_view what) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) fail("{}: cannot read {}: {}", path.string(), what, ec.message());
  if (size > limits.max_json)
    fail("{}: {} is {} bytes, over the {}-byte limit; is this the right file?", path.string(), what,
         size, limits.max_json);
  std::ifstream in(path, std::ios::binary);
  std::string text(size, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size)))
    fail("{}: cannot read {}", path.string(), what);
  check_json_depth(text, path.string());
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail("{}: {} is not valid JSON: {}", path.string(), what, e.what());
  }
}

void check_json_depth(std::string_view text, std::string_view where) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        fail("{}: the JSON nests arrays/objects deeper than {} levels (at byte {}); the file is "
             "corrupt",
             where, kMaxJsonDepth, i);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

void flatten_config(const nlohmann::json& j, const std::string& file,
                    std::map<std::string, MetaValue, std::less<>>& out) {
  if (!j.is_object()) fail("{}: config.json must be a JSON object, found {}", file, j.type_name());
  flatten(j, "", out);
}

}  // namespace rlx
