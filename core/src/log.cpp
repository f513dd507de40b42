#include "rlx/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

#include "rlx/error.h"

namespace rlx {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("rlx");
    l->set_pattern("%^[%l]%$ %v");
    l->set_level(spdlog::level::warn);
    return l;
  }();
  return *logger;
}

void set_log_level(std::string_view name) {
  auto level = spdlog::level::from_str(std::string(name));
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  if (level == spdlog::level::off && name != "off")
    fail("unknown log level '{}': use trace, debug, info, warn, error or off", name);
  log().set_level(level);
}

void init_log_from_env() {
  const char* env = std::getenv("RLX_LOG_LEVEL");
  if (!env || !*env) return;
  try {
    set_log_level(env);
  } catch (const Error& e) {
    log().warn("RLX_LOG_LEVEL: {}", e.what());
  }
}

}  // namespace rlx
