// Logging: one spdlog logger ("rlx") writing to stderr. Level from --log-level or RLX_LOG_LEVEL.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace rlx {

spdlog::logger& log();
// Sets the level from a name (trace, debug, info, warn, error, off); throws on an unknown name.
void set_log_level(std::string_view name);
// Applies RLX_LOG_LEVEL if set (an unknown value is reported and ignored).
void init_log_from_env();

}  // namespace rlx
