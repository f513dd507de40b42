// Weights opened on a device with the profile beside them, ready to generate: the reference
// runtime's `from_loader_at`. The pieces stay public for callers that need more control.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/generator.h"
#include "rlx/model.h"
#include "rlx/plugin_host.h"
#include "rlx/profile.h"

namespace rlx {

struct SessionOptions {
  std::string device = "cpu";         // "cpu", "vulkan:1"
  std::filesystem::path profile;      // explicit rlx.toml; empty = look beside the weights
  std::filesystem::path configs_dir;  // installed default profiles (may be empty)
  std::optional<bool> packed;         // unset: automatic by file size
  // Command-line flags, applied to the profile last: {key, value, flag}, e.g.
  // {"sampling.temperature", "0", "--temperature"}; errors name the flag.
  struct Override {
    std::string key, value, flag;
  };
  std::vector<Override> overrides;
};

struct Session {
  std::unique_ptr<Model> model;
  Profile profile;
  std::shared_ptr<Device> device;
  std::unique_ptr<Generator> generator;
  SampleOpts sampling;  // the profile's [sampling]

  // Loads the model, its profile (file, then RLX_* env), opens the device with the profile's
  // thread count and builds a Generator with its compile and memory settings.
  static Session open(PluginHost& host, const std::filesystem::path& weights,
                      const SessionOptions& opts = {});
};

}  // namespace rlx
