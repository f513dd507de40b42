// Which backends to test. The plugin host keeps only the best-scoring build of each backend
// name, so --all-variants loads every other build file on its own: a temporary directory that
// holds a symlink to just that file, and a PluginHost that looks nowhere else.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rlx/plugin_host.h"

namespace rlx::conformance {

// "cpu" or "cpu-avx2": what the table calls a backend build.
std::string backend_label(const PluginRecord& p);

// True when --backend values `wanted` select this build (by name or by label); empty = all.
bool selected(const std::vector<std::string>& wanted, const PluginRecord& p);

// Backend plugin files in `host`'s search path that it did not load (lower-scoring variants,
// and any file of a name it loaded from elsewhere), deduplicated by real path.
std::vector<std::filesystem::path> unloaded_backend_files(const PluginHost& host);

// A PluginHost that sees exactly one plugin file.
class IsolatedHost {
 public:
  explicit IsolatedHost(const std::filesystem::path& file);
  ~IsolatedHost();  // unloads the plugin, then removes the temporary directory
  IsolatedHost(const IsolatedHost&) = delete;
  IsolatedHost& operator=(const IsolatedHost&) = delete;

  PluginHost& host() { return *host_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<PluginHost> host_;
};

}  // namespace rlx::conformance
