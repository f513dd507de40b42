// Where a profile comes from: the file lookup order and the RLX_* environment variables.
// The schema and the file format are in profile.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <system_error>

#include "rlx/error.h"
#include "rlx/log.h"
#include "rlx/profile.h"

namespace fs = std::filesystem;

namespace rlx {
namespace {

// Older names the reference runtime read, kept so existing scripts keep working. Each is
// applied before the RLX_<SECTION>_<KEY> name, which wins when both are set.
struct EnvAlias {
  std::string_view key, var;
};
constexpr EnvAlias kEnvAliases[] = {
    {"memory.soft_fraction", "RLX_SOFT_MEMORY_FRACTION"},
    {"memory.soft_budget_bytes", "RLX_SOFT_MEMORY_BUDGET_BYTES"},
    {"memory.bucket_resident_bytes", "RLX_DECODE_BUCKET_RESIDENT_BYTES"},
    {"memory.keep_decode_graphs", "RLX_KEEP_DECODE_GRAPHS"},
    {"decode.resident_kv", "RLX_RESIDENT_KV"},
};

// "decode.max_past" -> "RLX_DECODE_MAX_PAST"; "llama32" -> "LLAMA32".
std::string env_word(std::string_view s) {
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    out += std::isalnum(u) ? static_cast<char>(std::toupper(u)) : '_';
  }
  return out;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::vector<fs::path> profile_candidates(const ProfileLookup& q) {
  if (!q.explicit_path.empty()) return {q.explicit_path};
  std::vector<fs::path> out;
  const std::string family_file = q.family.empty() ? "" : q.family + ".rlx.toml";
  if (!q.weights.empty()) {
    fs::path w = q.weights;
    if (!w.has_filename()) w = w.parent_path();  // "models/llama/" names the directory
    std::error_code ec;
    if (fs::is_directory(w, ec)) {
      out.push_back(w / "rlx.toml");
      out.push_back(w.parent_path() / (w.filename().string() + ".rlx.toml"));
      if (!family_file.empty()) out.push_back(w / family_file);
    } else {
      out.push_back(w.parent_path() / (w.stem().string() + ".rlx.toml"));
      if (!family_file.empty()) out.push_back(w.parent_path() / family_file);
    }
  }
  if (!q.configs_dir.empty() && !family_file.empty()) out.push_back(q.configs_dir / family_file);
  // Weights named after their family ("llama32.gguf") give the same file twice.
  std::vector<fs::path> unique;
  for (const fs::path& p : out)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
  return unique;
}

Profile load_profile(const ProfileLookup& q) {
  Profile p;
  p.device = q.device;
  p.searched = profile_candidates(q);
  if (!q.explicit_path.empty()) {
    std::error_code ec;
    if (!fs::exists(q.explicit_path, ec))
      fail("--profile {}: no such file", q.explicit_path.string());
    if (!is_file(q.explicit_path))
      fail("--profile {}: not a file (expected a .rlx.toml profile)", q.explicit_path.string());
  }
  auto found = std::find_if(p.searched.begin(), p.searched.end(), is_file);
  if (found != p.searched.end()) {
    apply_profile_file(p, *found, q.device);
    log().info("profile {}", found->string());
  } else {
    log().debug("no profile found; using the defaults");
  }
  if (q.getenv) apply_profile_env(p, q.family, q.getenv);
  return p;
}

void apply_profile_env(Profile& p, std::string_view family, const EnvGetter& getenv) {
  auto get = [&](const std::string& var) -> std::optional<std::string> {
    const char* v = getenv(var.c_str());
    if (!v || !*v) return std::nullopt;  // an empty value is "unset", as for RLX_LOG_LEVEL
    return std::string(v);
  };
  auto apply = [&](std::string_view key, const std::string& var) {
    if (auto v = get(var)) set_from_text(p, key, *v, fmt::format("{}='{}'", var, *v), "env " + var);
  };
  for (const std::string& key : profile_keys()) {
    for (const EnvAlias& a : kEnvAliases)
      if (a.key == key) apply(key, std::string(a.var));
    if (key == "decode.lm_head" && !family.empty()) {
      // RLX_<FAMILY>_GRAPH_LM_HEAD=1 moves the lm_head and argmax into the decode graph.
      const std::string var = fmt::format("RLX_{}_GRAPH_LM_HEAD", env_word(family));
      if (auto v = get(var)) {
        if (*v != "0" && *v != "1")
          fail("{}='{}': expected 0 or 1 (1 = decode.lm_head \"graph\")", var, *v);
        set_from_text(p, key, *v == "1" ? "graph" : "host", fmt::format("{}='{}'", var, *v),
                      "env " + var);
      }
    }
    const size_t dot = key.find('.');
    apply(key,
          fmt::format("RLX_{}_{}", env_word(key.substr(0, dot)), env_word(key.substr(dot + 1))));
  }
}

}  // namespace rlx
