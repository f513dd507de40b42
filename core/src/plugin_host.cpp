// Plugin discovery: scan -> check each file's header -> group by name -> init the best-scoring
// build of each name -> probe its devices. Every file turned down is recorded with the reason.
#include "rlx/plugin_host.h"

#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>

#include "plugin_probe.h"
#include "rlx/error.h"
#include "rlx/log.h"

namespace fs = std::filesystem;

namespace rlx {
namespace {

// The smallest header / table a 1.0 plugin can have: everything before `reserved`.
constexpr size_t kMinInfoSize = offsetof(rlx_plugin_info, reserved);
constexpr size_t kMinBackendSize = offsetof(rlx_backend_api, reserved);
constexpr size_t kMinModelSize = offsetof(rlx_model_api, reserved);

void host_log(int level, const char* plugin, const char* message) {
  auto lvl = static_cast<spdlog::level::level_enum>(std::clamp(level, 0, 4));
  log().log(lvl, "[{}] {}", plugin ? plugin : "?", message ? message : "");
}

// Plugin names are [a-z0-9_]; op names may also use '.' to carry their plugin's prefix.
bool valid_name(std::string_view s, bool allow_dot = false) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (allow_dot && c == '.');
  });
}

std::string str_or_empty(const char* s) { return s ? std::string(s) : std::string(); }

// The plugin whose init() is running on this thread; register_op is only valid then.
thread_local const char* t_initializing = nullptr;

void write_err(rlx_err err, const std::string& msg) {
  if (!err.msg || err.cap == 0) return;
  size_t n = std::min(msg.size(), err.cap - 1);
  std::memcpy(err.msg, msg.data(), n);
  err.msg[n] = '\0';
}

// Wraps a plugin's C inference callback as the registry's InferFn.
InferFn wrap_infer(rlx_infer_fn fn) {
  return [fn](std::span<const TensorInfo> in, const NodeAttrs& attrs, const Shape&) {
    std::vector<rlx_tensor_desc> descs(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      descs[i].dtype = in[i].dtype;
      descs[i].ndim = static_cast<uint32_t>(in[i].shape.size());
      std::copy(in[i].shape.begin(), in[i].shape.end(), descs[i].shape);
    }
    rlx_tensor_desc out{};
    ErrBuf eb;
    rlx_status st = fn(descs.data(), static_cast<uint32_t>(descs.size()), attrs.i.data(),
                       attrs.f.data(), &out, eb.err());
    if (st != RLX_OK) fail("{}", eb.msg[0] ? eb.msg : status_name(st));
    if (out.ndim == 0 || out.ndim > RLX_MAX_DIMS || !dtype_is_known(out.dtype))
      fail("the plugin's shape inference returned an invalid output (ndim {}, dtype {})", out.ndim,
           out.dtype);
    return TensorInfo{static_cast<DType>(out.dtype), Shape(out.shape, out.shape + out.ndim)};
  };
}

rlx_status host_register_op(const rlx_op_decl* decl, uint32_t* out_id, rlx_err err) {
  try {
    if (!t_initializing) fail("register_op may only be called from the plugin's init()");
    if (!decl || !out_id || decl->struct_size < offsetof(rlx_op_decl, reserved) || !decl->infer)
      fail("register_op: the declaration is incomplete (struct_size, name and infer are required)");
    std::string name = str_or_empty(decl->name);
    if (!valid_name(name, true)) fail("register_op: op name '{}' must be 1-64 of [a-z0-9_.]", name);
    OpDef def;
    def.name = name;
    def.min_inputs = static_cast<int>(decl->min_inputs);
    def.max_inputs = static_cast<int>(decl->max_inputs);
    def.alias = decl->inplace ? RLX_ALIAS_INPLACE : RLX_ALIAS_NONE;
    def.infer = wrap_infer(decl->infer);
    def.owner = t_initializing;
    *out_id = OpRegistry::global().add(std::move(def));
    log().debug("plugin '{}' registered op '{}' as id {}", t_initializing, name, *out_id);
    return RLX_OK;
  } catch (const std::exception& e) {
    write_err(err, e.what());
    return RLX_ERR_INVALID;
  }
}

const rlx_host_api kHostApi = {
    sizeof(rlx_host_api), RLX_ABI_MAJOR, RLX_ABI_MINOR, host_log, host_register_op, {}};

// Boost.DLL's error_code only says "Bad file descriptor"; ask the OS loader for its own words.
std::string loader_message(const fs::path& file) {
  dlerror();
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    return "the OS loader accepted it on a second try";
  }
  const char* e = dlerror();
  return e ? e : "unknown loader error";
}

}  // namespace

struct PluginHost::Loaded {
  boost::dll::shared_library lib;
  const rlx_plugin_info* info = nullptr;
  PluginRecord record;
  size_t order = 0;  // search order, for ties
  bool initialized = false;
  std::vector<DeviceRecord> devices;
  std::vector<std::weak_ptr<Device>> opened;

  const rlx_backend_api* backend() const { return static_cast<const rlx_backend_api*>(info->api); }
  const rlx_model_api* model() const { return static_cast<const rlx_model_api*>(info->api); }

  // The plugin's shutdown; the library is unloaded when `lib` is destroyed.
  // Runs the plugin's init with register_op enabled for it.
  rlx_status init(ErrBuf& eb) {
    t_initializing = record.name.c_str();
    rlx_status st = record.kind == RLX_PLUGIN_BACKEND ? backend()->init(&kHostApi, eb.err())
                                                      : model()->init(&kHostApi, eb.err());
    t_initializing = nullptr;
    if (st == RLX_OK)
      initialized = true;
    else
      OpRegistry::global().remove_owned_by(record.name);
    return st;
  }

  void shutdown() {
    if (!initialized) return;
    initialized = false;
    if (record.kind == RLX_PLUGIN_BACKEND) {
      if (backend()->shutdown) backend()->shutdown();
    } else if (model()->shutdown) {
      model()->shutdown();
    }
    OpRegistry::global().remove_owned_by(record.name);  // their infer code is about to go
  }

  // A backend's device_count and device_info for each device, into `devices`.
  rlx_status probe_devices(ErrBuf& pe) {
    uint32_t n = 0;
    rlx_status st = backend()->device_count(&n, pe.err());
    for (uint32_t i = 0; st == RLX_OK && i < n; ++i) {
      DeviceRecord d{record.name, i, {}};
      d.info.struct_size = sizeof(rlx_device_info);
      st = backend()->device_info(i, &d.info, pe.err());
      d.info.name[sizeof d.info.name - 1] = d.info.driver[sizeof d.info.driver - 1] = 0;
      d.info.capabilities[sizeof d.info.capabilities - 1] = 0;
      devices.push_back(d);
    }
    return st;
  }

  size_t open_devices() const {
    return static_cast<size_t>(
        std::count_if(opened.begin(), opened.end(), [](const auto& w) { return !w.expired(); }));
  }
};

fs::path PluginHost::install_plugin_dir() {
  boost::dll::fs::error_code ec;
  fs::path exe = boost::dll::program_location(ec);
  if (ec) return {};
  return (exe.parent_path() / ".." / "lib" / "rlx" / "plugins").lexically_normal();
}

bool PluginHost::is_plugin_filename(const std::string& filename) {
  static const std::regex re(
      R"(^librlx-(backend|model)-[A-Za-z0-9_]+(-[A-Za-z0-9_]+)?\.(so|dylib|dll)$)");
  return std::regex_match(filename, re);
}

PluginHost::PluginHost(PluginHostOptions opts) : opts_(std::move(opts)) {
  search_path_ = opts_.plugin_dirs;
  if (opts_.use_env) {
    if (const char* env = std::getenv("RLX_PLUGIN_PATH")) {
      std::string s(env);
      size_t start = 0;
      while (start <= s.size()) {
        size_t end = s.find(':', start);
        if (end == std::string::npos) end = s.size();
        // An empty or relative entry would mean the current directory (or one below it):
        // never for us; a plugin is code that runs.
        const fs::path entry = s.substr(start, end - start);
        if (!entry.empty() && entry.is_relative())
          log().warn("RLX_PLUGIN_PATH: '{}' is not an absolute path; skipped (rlx never loads "
                     "plugins relative to the current directory)",
                     entry.string());
        else if (!entry.empty())
          search_path_.push_back(entry);
        start = end + 1;
      }
    }
    if (const char* env = std::getenv("RLX_PLUGIN_PROBE"); env && *env) {
      const std::string_view v = env;
      if (v == "auto")
        opts_.probe = PluginHostOptions::Probe::Auto;
      else if (v == "isolated")
        opts_.probe = PluginHostOptions::Probe::Isolated;
      else if (v == "inprocess")
        opts_.probe = PluginHostOptions::Probe::InProcess;
      else
        fail("RLX_PLUGIN_PROBE='{}': expected auto, isolated or inprocess", v);
    }
    if (const char* env = std::getenv("RLX_PLUGIN_PROBE_TIMEOUT"); env && *env) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (*end != '\0' || v < 1 || v > 3600)
        fail("RLX_PLUGIN_PROBE_TIMEOUT='{}': expected whole seconds in [1, 3600]", env);
      opts_.probe_timeout_s = static_cast<int>(v);
    }
  }
  if (opts_.use_install_dir) {
    fs::path d = install_plugin_dir();
    if (!d.empty()) search_path_.push_back(d);
  }
  scan();
}

PluginHost::~PluginHost() {
  for (auto it = loaded_.rbegin(); it != loaded_.rend(); ++it) {
    Loaded& l = **it;
    if (l.open_devices() > 0) {
      // Unloading now would leave those devices calling into unmapped code.
      log().warn("plugin '{}' still has {} open device(s) at exit; leaving it loaded",
                 l.record.name, l.open_devices());
      (void)new boost::dll::shared_library(std::move(l.lib));  // intentionally leaked
      continue;
    }
    l.shutdown();
  }
}

void PluginHost::reject(const fs::path& file, std::string name, std::string reason,
                        bool expected) {
  // A GPU backend on a machine without that GPU is normal: `rlx devices` lists why; the log
  // says so only at info level.
  if (expected)
    log().info("plugin {}: {}", file.string(), reason);
  else
    log().warn("plugin {}: {}", file.string(), reason);
  rejected_.push_back(RejectedPlugin{file, std::move(name), std::move(reason)});
}

void PluginHost::warn_if_world_writable(const fs::path& p, const char* what) {
  std::error_code ec;
  const fs::perms perms = fs::status(p, ec).permissions();
  if (ec || (perms & fs::perms::others_write) == fs::perms::none) return;
  log().warn("plugin {} {} is writable by every user: anyone on this machine can put code there "
             "that rlx will run; `chmod o-w {}`",
             what, p.string(), p.string());
}

void PluginHost::scan() {
  // Every plugin file, in search order (a directory or file reached twice counts once).
  std::set<fs::path> seen_dirs, seen_files;
  std::vector<fs::path> files;
  const fs::path own_dir = fs::weakly_canonical(install_plugin_dir());
  std::vector<bool> isolate;
  for (const fs::path& dir : search_path_) {
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(dir, ec);
    if (ec || !fs::is_directory(canon, ec)) {
      log().debug("plugin dir {} does not exist; skipped", dir.string());
      continue;
    }
    if (!seen_dirs.insert(canon).second) continue;
    warn_if_world_writable(canon, "directory");
    std::vector<fs::path> here;
    for (const auto& entry : fs::directory_iterator(canon, ec))
      if (is_plugin_filename(entry.path().filename().string())) here.push_back(entry.path());
    std::sort(here.begin(), here.end());
    for (const fs::path& f : here) {
      fs::path real = fs::weakly_canonical(f, ec);
      if (!seen_files.insert(ec ? f : real).second) continue;
      warn_if_world_writable(f, "file");
      files.push_back(f);
      isolate.push_back(opts_.probe == PluginHostOptions::Probe::Isolated ||
                        (opts_.probe == PluginHostOptions::Probe::Auto && canon != own_dir));
    }
  }

  // Plugins to isolate: load and probe them in a child process first; one that takes the
  // child down is rejected, and the child goes on with the rest.
  std::vector<size_t> order;  // indices into `files` of the plugins to isolate
  for (size_t i = 0; i < files.size(); ++i)
    if (isolate[i]) order.push_back(i);
  std::vector<bool> crashed(files.size(), false);
  auto probe = [&](size_t k) {
    std::unique_ptr<Loaded> l = try_load(files[order[k]]);
    if (!l || l->record.score == 0) return;
    ErrBuf eb;
    if (l->init(eb) != RLX_OK || l->record.kind != RLX_PLUGIN_BACKEND) return;
    ErrBuf pe;
    (void)l->probe_devices(pe);
  };
  for (size_t from = 0; from < order.size();) {
    auto failure = run_probes_in_child(from, order.size(), probe, opts_.probe_timeout_s);
    if (!failure) break;
    const size_t i = order[failure->index];
    crashed[i] = true;
    reject(files[i], "", "the plugin " + failure->reason);
    from = failure->index + 1;
  }

  std::vector<std::unique_ptr<Loaded>> candidates;
  for (size_t i = 0; i < files.size(); ++i) {
    if (crashed[i]) continue;
    CrashNote note(files[i].string(), "being loaded");
    if (auto c = try_load(files[i])) {
      c->order = i + 1;
      candidates.push_back(std::move(c));
    }
  }

  // Group by (kind, name); best score first, then search order.
  std::map<std::pair<int, std::string>, std::vector<Loaded*>> groups;
  for (auto& c : candidates) groups[{c->record.kind, c->record.name}].push_back(c.get());
  std::set<Loaded*> keep;
  for (auto& [key, group] : groups) {
    std::stable_sort(group.begin(), group.end(), [](const Loaded* a, const Loaded* b) {
      return a->record.score != b->record.score ? a->record.score > b->record.score
                                                : a->order < b->order;
    });
    Loaded* winner = nullptr;
    for (Loaded* c : group) {
      const PluginRecord& r = c->record;
      if (winner) {
        if (r.variant == winner->record.variant) {
          reject(r.path, r.name,
                 fmt::format("duplicate plugin '{}'{}: {} is used instead", r.name,
                             r.variant.empty() ? "" : " (variant " + r.variant + ")",
                             winner->record.path.string()));
        } else {
          std::string why = r.score == 0 ? "cannot run on this machine (score 0)"
                                         : fmt::format("score {}", r.score);
          log().info("plugin {}: variant '{}' not used ({}); '{}' scores {}", r.path.string(),
                     r.variant, why, winner->record.variant, winner->record.score);
          rejected_.push_back(RejectedPlugin{
              r.path, r.name,
              fmt::format("variant '{}' not used ({}): variant '{}' of {} scores {}", r.variant,
                          why, winner->record.variant, winner->record.path.filename().string(),
                          winner->record.score),
              true});
        }
        continue;
      }
      if (r.score == 0) {
        reject(r.path, r.name,
               fmt::format("score 0: plugin '{}'{} cannot run on this machine", r.name,
                           r.variant.empty() ? "" : " (variant " + r.variant + ")"));
        continue;
      }
      // Init and probe; on failure fall back to the next-best build of the same name.
      CrashNote note(r.path.string(), "initializing and probing its devices");
      ErrBuf eb;
      rlx_status st = c->init(eb);
      if (st != RLX_OK) {
        reject(r.path, r.name, fmt::format("init failed ({}): {}", status_name(st), eb.msg));
        continue;
      }
      if (r.kind == RLX_PLUGIN_BACKEND) {
        ErrBuf pe;
        st = c->probe_devices(pe);
        if (st != RLX_OK) {
          c->shutdown();
          c->devices.clear();
          reject(r.path, r.name,
                 fmt::format("unavailable: device probe failed ({}): {}", status_name(st), pe.msg),
                 st == RLX_ERR_NO_DEVICE);
          continue;
        }
      }
      winner = c;
      keep.insert(c);
    }
  }
  for (auto& c : candidates)
    if (keep.count(c.get())) loaded_.push_back(std::move(c));
  std::sort(loaded_.begin(), loaded_.end(), [](const auto& a, const auto& b) {
    return std::tie(a->record.kind, a->record.name) < std::tie(b->record.kind, b->record.name);
  });
}

// Loads one file and checks its header; nullptr (and a rejection) when it is not usable.
std::unique_ptr<PluginHost::Loaded> PluginHost::try_load(const fs::path& file) {
  auto l = std::make_unique<Loaded>();
  boost::dll::fs::error_code ec;
  l->lib.load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec || !l->lib.is_loaded()) {
    reject(file, "", "cannot load: " + loader_message(file));
    return nullptr;
  }
  if (!l->lib.has(RLX_QUERY_SYMBOL)) {
    reject(file, "",
           "no " RLX_QUERY_SYMBOL " symbol: not an rlx plugin, or built without RLX_PLUGIN_EXPORT");
    return nullptr;
  }
  auto query = l->lib.get<std::remove_pointer_t<rlx_plugin_query_fn>>(RLX_QUERY_SYMBOL);
  const rlx_plugin_info* info = query(RLX_ABI_MAJOR);
  if (!info) {
    reject(file, "",
           fmt::format(RLX_QUERY_SYMBOL " returned NULL: the plugin refused host ABI {}",
                       RLX_ABI_MAJOR));
    return nullptr;
  }
  if (info->abi_major != RLX_ABI_MAJOR) {
    reject(file, "",
           fmt::format("built for plugin ABI {}.{}, but this rlx speaks ABI {}.{}; rebuild the "
                       "plugin against this rlx's SDK (find_package(rlx))",
                       info->abi_major, info->abi_minor, RLX_ABI_MAJOR, RLX_ABI_MINOR));
    return nullptr;
  }
  if (info->struct_size < kMinInfoSize) {
    reject(file, "",
           fmt::format("plugin header struct_size {} is smaller than the ABI {}.0 header ({} "
                       "bytes): corrupt or mis-built plugin",
                       info->struct_size, RLX_ABI_MAJOR, kMinInfoSize));
    return nullptr;
  }
  std::string name = str_or_empty(info->name);
  if (!valid_name(name)) {
    reject(file, "", fmt::format("invalid plugin name '{}': use 1-64 of [a-z0-9_]", name));
    return nullptr;
  }
  if (info->kind != RLX_PLUGIN_BACKEND && info->kind != RLX_PLUGIN_MODEL) {
    reject(file, name, fmt::format("unknown plugin kind {}", info->kind));
    return nullptr;
  }
  if (!info->api) {
    reject(file, name, "plugin header has no api table");
    return nullptr;
  }
  if (info->kind == RLX_PLUGIN_BACKEND) {
    const auto* api = static_cast<const rlx_backend_api*>(info->api);
    if (api->struct_size < kMinBackendSize) {
      reject(file, name,
             fmt::format("backend table struct_size {} is smaller than ABI {}.0's {}",
                         api->struct_size, RLX_ABI_MAJOR, kMinBackendSize));
      return nullptr;
    }
    const void* fns[] = {
        (void*)api->init,        (void*)api->device_count,    (void*)api->device_info,
        (void*)api->device_open, (void*)api->device_close,    (void*)api->buffer_alloc,
        (void*)api->buffer_free, (void*)api->buffer_write,    (void*)api->buffer_read,
        (void*)api->supports,    (void*)api->program_compile, (void*)api->program_run,
        (void*)api->program_free};
    if (std::any_of(std::begin(fns), std::end(fns), [](const void* p) { return !p; })) {
      reject(file, name, "backend table has a NULL required function");
      return nullptr;
    }
  } else {
    const auto* api = static_cast<const rlx_model_api*>(info->api);
    if (api->struct_size < kMinModelSize || !api->init || !api->load || !api->free ||
        !api->build_forward || !api->gguf_architectures || !api->hf_model_types) {
      reject(file, name, "model table is too small or lacks a required function or list");
      return nullptr;
    }
    for (const char* const* a = api->gguf_architectures; *a; ++a)
      l->record.architectures.push_back(*a);
    for (const char* const* a = api->hf_model_types; *a; ++a)
      l->record.architectures.push_back(std::string("hf:") + *a);
  }
  l->info = info;
  PluginRecord& r = l->record;
  r.path = file;
  r.name = name;
  r.variant = str_or_empty(info->variant);
  r.version = str_or_empty(info->version);
  r.description = str_or_empty(info->description);
  r.kind = static_cast<rlx_plugin_kind>(info->kind);
  r.abi_major = info->abi_major;
  r.abi_minor = info->abi_minor;
  r.score = info->score ? info->score() : 1;
  return l;
}

std::vector<PluginRecord> PluginHost::plugins() const {
  std::vector<PluginRecord> out;
  for (const auto& l : loaded_) out.push_back(l->record);
  return out;
}

std::vector<DeviceRecord> PluginHost::devices() const {
  std::vector<DeviceRecord> out;
  for (const auto& l : loaded_) out.insert(out.end(), l->devices.begin(), l->devices.end());
  return out;
}

PluginHost::Loaded* PluginHost::find(std::string_view name) const {
  for (const auto& l : loaded_)
    if (l->record.kind == RLX_PLUGIN_BACKEND && l->record.name == name) return l.get();
  return nullptr;
}

bool PluginHost::has_backend(std::string_view name) const { return find(name) != nullptr; }

std::shared_ptr<Device> PluginHost::open_device(std::string_view name, uint32_t index,
                                                uint32_t n_threads) {
  Loaded* l = find(name);
  if (!l) {
    std::vector<std::string> names;
    for (const auto& p : loaded_)
      if (p->record.kind == RLX_PLUGIN_BACKEND) names.push_back(p->record.name);
    for (const auto& r : rejected_)
      if (r.name == name)
        fail("backend '{}' was found in {} but not loaded: {}", name, r.path.string(), r.reason);
    fail("no backend named '{}'; loaded backends: {} (run `rlx devices` to see them all)", name,
         names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
  }
  if (index >= l->devices.size())
    fail("backend '{}' has {} device(s); there is no device {}{}", name, l->devices.size(), index,
         l->devices.empty() ? " (no device present on this machine)" : "");
  rlx_device_options opts{};
  opts.struct_size = sizeof opts;
  opts.n_threads = n_threads;
  rlx_device* h = nullptr;
  ErrBuf eb;
  check_status(l->backend()->device_open(index, &opts, &h, eb.err()), eb,
               fmt::format("opening {}:{}", name, index));
  auto dev = std::make_shared<Device>(l->backend(), std::string(name), index, h);
  l->opened.push_back(dev);
  return dev;
}

std::shared_ptr<Device> PluginHost::host_device_for(const Device& dev, uint32_t n_threads) {
  if (dev.backend() == "cpu" || !has_backend("cpu")) return nullptr;
  return open_device("cpu", 0, n_threads);
}

std::shared_ptr<Device> PluginHost::open_device_spec(std::string_view spec, uint32_t n_threads) {
  std::string_view name = spec;
  uint32_t index = 0;
  if (size_t colon = spec.find(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    std::string idx(spec.substr(colon + 1));
    char* end = nullptr;
    unsigned long v = idx.empty() ? 0 : std::strtoul(idx.c_str(), &end, 10);
    if (idx.empty() || *end != '\0' || v > 1024)
      fail("bad device '{}': expected NAME or NAME:INDEX, e.g. cpu or vulkan:1", spec);
    index = static_cast<uint32_t>(v);
  }
  if (name.empty()) fail("bad device '{}': the backend name is empty", spec);
  return open_device(name, index, n_threads);
}

ModelPlugin PluginHost::model_plugin(std::string_view format, std::string_view architecture) const {
  std::string want =
      format == "gguf" ? std::string(architecture) : "hf:" + std::string(architecture);
  std::vector<std::string> known;
  for (const auto& l : loaded_) {
    if (l->record.kind != RLX_PLUGIN_MODEL) continue;
    for (const auto& a : l->record.architectures) {
      if (a == want) return ModelPlugin{l->record.name, l->model()};
      known.push_back(a);
    }
  }
  fail("no model plugin handles {} architecture '{}'; supported: {}", format, architecture,
       known.empty() ? "none (no model plugins were found; see `rlx devices`)"
                     : fmt::format("{}", fmt::join(known, ", ")));
}

void PluginHost::unload(std::string_view name) {
  for (auto it = loaded_.begin(); it != loaded_.end(); ++it) {
    Loaded& l = **it;
    if (l.record.name != name) continue;
    if (size_t n = l.open_devices())
      fail("cannot unload plugin '{}': {} device(s) opened from it are still in use", name, n);
    l.shutdown();
    loaded_.erase(it);  // unmaps the library
    return;
  }
  fail("cannot unload plugin '{}': it is not loaded", name);
}

}  // namespace rlx
