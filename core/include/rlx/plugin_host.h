// Plugin discovery and lifetime. Scans the plugin directories for files named like plugins
// (librlx-backend-<name>[-<variant>].so, librlx-model-<family>.so), loads each with Boost.DLL,
// checks its header before calling anything else, keeps the best-scoring build of each name and
// records every file it turned down with the reason.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/backend.h"
#include "rlx/plugin_abi.h"

namespace rlx {

struct PluginHostOptions {
  std::vector<std::filesystem::path> plugin_dirs;  // --plugin-dir, searched first, in order
  bool use_env = true;                             // then RLX_PLUGIN_PATH (colon-separated)
  bool use_install_dir = true;                     // then <exe dir>/../lib/rlx/plugins
  // Where plugins are first loaded and probed: Auto = plugins outside rlx's own plugin
  // directory (install_plugin_dir()) go through a child process first, so one that crashes or
  // hangs while loading or probing is rejected instead of taking rlx down; Isolated = every
  // plugin; InProcess = none. With use_env, RLX_PLUGIN_PROBE=auto|isolated|inprocess and
  // RLX_PLUGIN_PROBE_TIMEOUT=<seconds> override these.
  enum class Probe { Auto, Isolated, InProcess } probe = Probe::Auto;
  int probe_timeout_s = 60;  // a child probe that makes no progress this long is killed
};

struct PluginRecord {
  std::filesystem::path path;
  std::string name;
  std::string variant;
  std::string version;
  std::string description;
  rlx_plugin_kind kind = RLX_PLUGIN_BACKEND;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  uint32_t score = 0;
  std::vector<std::string> architectures;  // model plugins: GGUF archs, then "hf:" model_types
};

// A loaded model-family plugin, as the model loader needs it.
struct ModelPlugin {
  std::string name;
  const rlx_model_api* api = nullptr;
};

struct RejectedPlugin {
  std::filesystem::path path;
  std::string name;  // empty when the file never told us
  std::string reason;
  // True for a working build that lost to a better-scoring variant of the same plugin: normal,
  // not an error (e.g. the generic cpu build on an avx512 machine).
  bool superseded = false;
};

// A probed device of a loaded backend.
struct DeviceRecord {
  std::string backend;
  uint32_t index = 0;
  rlx_device_info info{};
};

class PluginHost {
 public:
  explicit PluginHost(PluginHostOptions opts = {});
  ~PluginHost();  // unloads everything (each plugin's shutdown first)
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // The directories searched, in order (existing or not).
  const std::vector<std::filesystem::path>& search_path() const { return search_path_; }
  std::vector<PluginRecord> plugins() const;
  const std::vector<RejectedPlugin>& rejected() const { return rejected_; }
  std::vector<DeviceRecord> devices() const;

  bool has_backend(std::string_view name) const;
  // Opens device `index` of backend `name`; throws naming the backend and what is available.
  std::shared_ptr<Device> open_device(std::string_view name, uint32_t index = 0,
                                      uint32_t n_threads = 0);
  // Parses "cpu", "vulkan:1" and opens it.
  std::shared_ptr<Device> open_device_spec(std::string_view spec, uint32_t n_threads = 0);
  // The cpu device that backs `dev` (host-side lm_head, ops `dev` lacks): nullptr when `dev`
  // is the cpu itself or no cpu plugin is installed.
  std::shared_ptr<Device> host_device_for(const Device& dev, uint32_t n_threads = 0);

  // The model plugin that claims a GGUF general.architecture (format "gguf") or an HF
  // model_type (format "safetensors"); throws listing the architectures that are supported.
  ModelPlugin model_plugin(std::string_view format, std::string_view architecture) const;

  // Calls the plugin's shutdown (which stops its threads) and unloads the library. Devices
  // still open on it must have been released first; throws otherwise.
  void unload(std::string_view name);

  // The install directory relative to the running executable.
  static std::filesystem::path install_plugin_dir();
  // True when `filename` looks like a plugin: librlx-(backend|model)-*.so
  static bool is_plugin_filename(const std::string& filename);

 private:
  struct Loaded;
  void scan();
  std::unique_ptr<Loaded> try_load(const std::filesystem::path& file);
  // expected: the plugin is fine but has no device here (logged at info, not warn).
  void reject(const std::filesystem::path& file, std::string name, std::string reason,
              bool expected = false);
  Loaded* find(std::string_view name) const;

  void warn_if_world_writable(const std::filesystem::path& p, const char* what);

  PluginHostOptions opts_;
  std::vector<std::filesystem::path> search_path_;
  std::vector<std::unique_ptr<Loaded>> loaded_;
  std::vector<RejectedPlugin> rejected_;
};

}  // namespace rlx
