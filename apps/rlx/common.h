// Flags shared by every command and the helpers that apply them.
#pragma once

#include <cstdint>
#include <cxxopts.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "rlx/plugin_host.h"

namespace rlx::cli {

// --plugin-dir (repeatable), --log-level, -v/--verbose, -h/--help.
void add_common_flags(cxxopts::Options& opts);
// Parses argv; prints help and returns false when --help was given.
bool parse_flags(cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult& out);
// Applies --log-level / --verbose and returns the plugin host options.
PluginHostOptions apply_common_flags(const cxxopts::ParseResult& r);

// Flags that override a profile key, applied last (after the file and the environment); run,
// chat and bench take them.
struct ProfileFlag {
  const char* flag;
  const char* key;
  const char* help;
};
inline constexpr ProfileFlag kProfileFlags[] = {
    {"temperature", "sampling.temperature", "0 = greedy"},
    {"top-k", "sampling.top_k", "keep the k most likely (0 = off)"},
    {"top-p", "sampling.top_p", "nucleus mass (1 = off)"},
    {"min-p", "sampling.min_p", "drop below min-p x the top probability (0 = off)"},
    {"repeat-penalty", "sampling.repeat_penalty", "penalize recent tokens (1 = off)"},
    {"repeat-last-n", "sampling.repeat_last_n", "tokens the penalty looks back over"},
    {"seed", "sampling.seed", "sampling seed (-1 = random, logged)"},
    {"threads", "threads.count", "backend threads (0 = all cores)"},
    {"max-seq", "memory.max_seq", "KV cache rows (0 = min(model context, 4096))"},
};

// <prefix>/share/rlx/configs for an installed rlx (the build tree mirrors it); empty if unknown.
std::filesystem::path installed_configs_dir();

// --prompt-ids: comma-separated token ids ("1,42"), each in [0, INT32_MAX]; throws rlx::Error
// for an empty list or an item that is not one (cmd_run splits prompts on ';' first).
std::vector<int32_t> parse_ids(const std::string& s);

std::string human_bytes(uint64_t bytes);  // "1.5 GiB"
std::string json_escape(std::string_view s);

}  // namespace rlx::cli
