// `rlx info PATH`: what is in a weight file — format, architecture, every metadata key (long
// arrays summarized) and every tensor with its dtype, shape and size, then the totals. Reads
// headers only: the tensor data stays unread in the mapping. --json for scripts.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "rlx/error.h"
#include "rlx/weights.h"

namespace rlx::cli {
namespace {

constexpr size_t kTextItems = 8;   // array items shown per metadata line
constexpr size_t kJsonItems = 16;  // array items written per metadata entry

struct Totals {
  uint64_t params = 0;
  uint64_t bytes = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_dtype;  // name -> (tensors, bytes)
};

Totals totals_of(const WeightFile& f) {
  Totals t;
  for (const auto& e : f.tensors()) {
    t.params += static_cast<uint64_t>(e.elems());
    t.bytes += e.nbytes;
    auto& d = t.by_dtype[std::string(dtype_name(e.dtype))];
    d.first += 1;
    d.second += e.nbytes;
  }
  return t;
}

std::string architecture(const WeightFile& f) {
  for (const char* key : {"general.architecture", "model_type"})
    if (const MetaValue* v = f.meta(key))
      if (const std::string* s = v->as_string()) return *s;
  return "";
}

std::string human_count(uint64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", n / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} M", n / 1e6);
  if (n >= 1'000) return fmt::format("{:.1f} K", n / 1e3);
  return std::to_string(n);
}

std::string type_name(const MetaValue& v) {
  if (!v.is_array()) return std::string(meta_type_name(v.type()));
  return fmt::format("array<{}>", meta_type_name(v.array_type()));
}

void print_text(const WeightFile& f) {
  std::string format = f.format();
  if (f.gguf_version()) format += fmt::format(" v{}", f.gguf_version());
  std::string arch = architecture(f);
  std::printf("file:          %s\nformat:        %s\narchitecture:  %s\nmapped:        %s\n",
              f.path().string().c_str(), format.c_str(), arch.empty() ? "-" : arch.c_str(),
              human_bytes(f.mapped_bytes()).c_str());

  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  size_t key_w = 0;
  for (const auto& [k, v] : f.metadata()) key_w = std::max(key_w, k.size());
  key_w = std::min<size_t>(key_w, 48);
  for (const auto& [k, v] : f.metadata())
    std::printf("  %-*s  %s\n", static_cast<int>(key_w), k.c_str(), v.describe(kTextItems).c_str());

  std::printf("\ntensors (%zu):\n", f.tensors().size());
  size_t name_w = 4;
  for (const auto& e : f.tensors()) name_w = std::max(name_w, e.name.size());
  name_w = std::min<size_t>(name_w, 56);
  std::printf("  %-*s  %-6s  %-20s  %s\n", static_cast<int>(name_w), "name", "dtype", "shape",
              "bytes");
  for (const auto& e : f.tensors())
    std::printf("  %-*s  %-6s  %-20s  %llu\n", static_cast<int>(name_w), e.name.c_str(),
                std::string(dtype_name(e.dtype)).c_str(), shape_str(e.shape).c_str(),
                static_cast<unsigned long long>(e.nbytes));

  Totals t = totals_of(f);
  std::printf("\ntotal: %zu tensors, %llu params (%s), %llu bytes (%s)\n", f.tensors().size(),
              static_cast<unsigned long long>(t.params), human_count(t.params).c_str(),
              static_cast<unsigned long long>(t.bytes), human_bytes(t.bytes).c_str());
  for (const auto& [name, d] : t.by_dtype)
    std::printf("  %-6s %6llu tensors  %s\n", name.c_str(),
                static_cast<unsigned long long>(d.first), human_bytes(d.second).c_str());
}

// A metadata value as JSON; arrays keep their first `max_items` items.
std::string value_json(const MetaValue& v, size_t max_items) {
  if (const std::string* s = v.as_string()) return "\"" + json_escape(*s) + "\"";
  if (const auto* a = v.as_array()) {
    std::string out = "[";
    for (size_t i = 0; i < std::min(a->size(), max_items); ++i)
      out += (i ? "," : "") + value_json((*a)[i], max_items);
    return out + "]";
  }
  if (auto b = v.as_bool()) return *b ? "true" : "false";
  if (v.is_float()) {
    double d = *v.as_float();
    if (!std::isfinite(d)) return "null";  // JSON has no nan/inf
    return v.type() == MetaType::F32 ? fmt::format("{}", static_cast<float>(d))
                                     : fmt::format("{}", d);
  }
  if (auto i = v.as_int()) return std::to_string(*i);
  return std::to_string(*v.as_uint());
}

void print_json(const WeightFile& f) {
  std::string arch = architecture(f);
  std::string out = fmt::format(
      R"({{"file":"{}","format":"{}","gguf_version":{},"architecture":{},"mapped_bytes":{},"metadata":{{)",
      json_escape(f.path().string()), f.format(), f.gguf_version(),
      arch.empty() ? "null" : "\"" + json_escape(arch) + "\"", f.mapped_bytes());
  const char* sep = "";
  for (const auto& [k, v] : f.metadata()) {
    out += fmt::format(R"({}"{}":{{"type":"{}")", sep, json_escape(k), type_name(v));
    if (const auto* a = v.as_array())
      out += fmt::format(R"(,"length":{},"truncated":{})", a->size(),
                         a->size() > kJsonItems ? "true" : "false");
    out += fmt::format(R"(,"value":{}}})", value_json(v, kJsonItems));
    sep = ",";
  }
  out += R"(},"tensors":[)";
  sep = "";
  for (const auto& e : f.tensors()) {
    out += fmt::format(
        R"({}{{"name":"{}","dtype":"{}","shape":[{}],"bytes":{},"file":"{}","offset":{}}})", sep,
        json_escape(e.name), dtype_name(e.dtype), fmt::join(e.shape, ","), e.nbytes,
        json_escape(e.file), e.file_offset);
    sep = ",";
  }
  Totals t = totals_of(f);
  out += fmt::format(R"(],"totals":{{"tensors":{},"params":{},"bytes":{}}}}})", f.tensors().size(),
                     t.params, t.bytes);
  out += "\n";
  std::fputs(out.c_str(), stdout);
}

}  // namespace

int cmd_info(int argc, char** argv) {
  cxxopts::Options opts("rlx info",
                        "Show a weight file's format, metadata and tensors (a .gguf file, a "
                        ".safetensors file or a Hugging Face model directory).");
  add_common_flags(opts);
  opts.add_options()("json", "print JSON instead of text")("path", "the weights",
                                                           cxxopts::value<std::string>());
  opts.parse_positional({"path"});
  opts.positional_help("PATH");
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  apply_common_flags(r);
  if (!r.count("path"))
    fail(
        "rlx info: no weights given: rlx info PATH (a .gguf file, a .safetensors file or a "
        "model directory)");
  auto f = WeightFile::open(r["path"].as<std::string>());
  if (r.count("json"))
    print_json(*f);
  else
    print_text(*f);
  return 0;
}

}  // namespace rlx::cli
