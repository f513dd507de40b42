#include "common.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "rlx/error.h"
#include "rlx/log.h"

namespace rlx::cli {

void add_common_flags(cxxopts::Options& opts) {
  opts.add_options("common")("plugin-dir", "search DIR for plugins first (repeatable)",
                             cxxopts::value<std::vector<std::string>>(), "DIR")(
      "log-level", "trace, debug, info, warn, error, off (or RLX_LOG_LEVEL)",
      cxxopts::value<std::string>(),
      "LEVEL")("v,verbose", "more detail (same as --log-level info)")("h,help", "show this help");
}

bool parse_flags(cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult& out) {
  try {
    out = opts.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    fail("{}: {} (see `rlx {} --help`)", opts.program(), e.what(), argv[0]);
  }
  if (out.count("help")) {
    std::printf("%s\n", opts.help().c_str());
    return false;
  }
  if (!out.unmatched().empty())
    fail("{}: unexpected argument '{}' (see `{} --help`)", opts.program(), out.unmatched()[0],
         opts.program());
  return true;
}

PluginHostOptions apply_common_flags(const cxxopts::ParseResult& r) {
  if (r.count("verbose")) set_log_level("info");
  if (r.count("log-level")) set_log_level(r["log-level"].as<std::string>());
  PluginHostOptions opts;
  if (r.count("plugin-dir"))
    for (const auto& d : r["plugin-dir"].as<std::vector<std::string>>())
      opts.plugin_dirs.emplace_back(d);
  return opts;
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string item = s.substr(i, j - i);
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0 || v > INT32_MAX)
      fail("--prompt-ids: '{}' is not a token id (expected comma-separated integers, e.g. 1,42)",
           item);
    ids.push_back(static_cast<int32_t>(v));
    i = j + 1;
  }
  if (ids.empty()) fail("--prompt-ids is empty");
  return ids;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::filesystem::path installed_configs_dir() {
  std::filesystem::path plugins = PluginHost::install_plugin_dir();  // <prefix>/lib/rlx/plugins
  if (plugins.empty()) return {};
  return plugins.parent_path().parent_path().parent_path() / "share" / "rlx" / "configs";
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace rlx::cli
