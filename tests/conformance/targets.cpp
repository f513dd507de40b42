#include "targets.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>

namespace rlx::conformance {

namespace fs = std::filesystem;

std::string backend_label(const PluginRecord& p) {
  return p.variant.empty() ? p.name : p.name + "-" + p.variant;
}

bool selected(const std::vector<std::string>& wanted, const PluginRecord& p) {
  if (wanted.empty()) return true;
  std::string label = backend_label(p);
  return std::any_of(wanted.begin(), wanted.end(),
                     [&](const std::string& w) { return w == p.name || w == label; });
}

namespace {

fs::path real(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(p, ec);
  return ec ? p : r;
}

}  // namespace

std::vector<fs::path> unloaded_backend_files(const PluginHost& host) {
  std::set<fs::path> seen;
  for (const PluginRecord& p : host.plugins()) seen.insert(real(p.path));
  std::vector<fs::path> out;
  for (const fs::path& dir : host.search_path()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind("librlx-backend-", 0) == 0 && PluginHost::is_plugin_filename(name))
        files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());  // directory order is not stable across runs
    for (const fs::path& f : files)
      if (seen.insert(real(f)).second) out.push_back(f);
  }
  return out;
}

IsolatedHost::IsolatedHost(const fs::path& file) {
  static std::atomic<int> counter{0};
  dir_ = fs::temp_directory_path() / fmt::format("rlx-conformance-{}-{}", ::getpid(), counter++);
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  try {
    fs::create_symlink(fs::absolute(file), dir_ / file.filename());
    PluginHostOptions opts;
    opts.plugin_dirs = {dir_};
    opts.use_env = false;
    opts.use_install_dir = false;
    host_ = std::make_unique<PluginHost>(opts);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    throw;
  }
}

IsolatedHost::~IsolatedHost() {
  host_.reset();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

}  // namespace rlx::conformance
