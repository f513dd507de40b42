// Flags shared by every command and the helpers that apply them.
#pragma once

#include <cxxopts.hpp>
#include <string>

#include "rlx/plugin_host.h"

namespace rlx::cli {

// --plugin-dir (repeatable), --log-level, -v/--verbose, -h/--help.
void add_common_flags(cxxopts::Options& opts);
// Parses argv; prints help and returns false when --help was given.
bool parse_flags(cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult& out);
// Applies --log-level / --verbose and returns the plugin host options.
PluginHostOptions apply_common_flags(const cxxopts::ParseResult& r);

std::string human_bytes(uint64_t bytes);  // "1.5 GiB"
std::string json_escape(std::string_view s);

}  // namespace rlx::cli
